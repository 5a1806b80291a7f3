import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogueObject, useMigrationDatabase } from '@pcg/testkit/testing';
import { createDatabase } from '../db/index.ts';
import { createQueryEngine } from '../query/index.ts';

const MIGRATION = '1795300055000_finance-transactions-once.sql';
const object = catalogueObject;

// Issue 33, existing data: rows cached before the migration get a date, the one category language and (for
// the bank-link bridge) an account type; answered account matches keep their answers; transactions of a
// merged account that only its later copy has become readable.
describe('the finance transactions-once migration', () => {
  const scratch = useMigrationDatabase();

  it('backfills date, remaps categories, infers bridge account types, keeps answers and reads a merged account\'s own transactions', async () => {
    expect(await scratch.migrateBefore(MIGRATION)).toBeGreaterThan(0);
    const database = await createDatabase(scratch.url, { maximumPoolSize: 2 });
    const db = database.pool;
    try {
      const plaid = randomUUID();
      const bridge = randomUUID();
      await db.query(sql.unsafe`
        INSERT INTO connections (id, user_id, provider, sector, created_at) VALUES
          (${plaid}::uuid, 1, 'plaid', 'finance', '2026-01-01T00:00:00Z'), (${bridge}::uuid, 1, 'simplefin', 'finance', '2026-02-01T00:00:00Z')`);
      const account = (connection: string, sourceId: string, domain: string, name: string, mask: string | null, type: string | null, balance: string) =>
        db.oneFirst(sql.type(z.object({ id: z.string() }))`
          INSERT INTO finance_accounts (connection_id, source, source_id, institution_domain, name, mask, type, balance_current, balance_available)
          VALUES (${connection}::uuid, 'x', ${sourceId}, ${domain}, ${name}, ${mask}, ${type}, ${balance}::numeric, ${balance}::numeric) RETURNING id`);
      const pChk = await account(plaid, 'p-chk', 'chase.com', 'Checking', '4821', 'depository', '900.00');
      const pCard = await account(plaid, 'p-card', 'capitalone.com', 'Venture', '1111', 'credit', '250.00');
      const sChk = await account(bridge, '%/s-chk', 'chase.com', 'TOTAL CHECKING 4821', '4821', null, '900.00');
      const sCard = await account(bridge, '%/s-card', 'capitalone.com', 'Venture Rewards Card', null, null, '-250.00');
      const sBrokerage = await account(bridge, '%/s-inv', 'vanguard.com', 'Taxable', null, null, '5000.00');
      const sUnknown = await account(bridge, '%/s-x', 'ally.com', 'Everyday', null, null, '12.00');
      await db.query(sql.unsafe`INSERT INTO finance_holdings (connection_id, source, source_id, account_id) VALUES (${bridge}::uuid, 'x', '%/s-inv:h1', ${sBrokerage})`);
      // The checking pair merged automatically; the card pair answered "same account" by the operator.
      await db.query(sql.unsafe`
        INSERT INTO finance_account_matches (first_connection_id, first_source_id, second_connection_id, second_source_id, institution_domain, automatic, same, answered_at)
        VALUES (${plaid}::uuid, 'p-chk', ${bridge}::uuid, '%/s-chk', 'chase.com', true, true, NULL),
               (${plaid}::uuid, 'p-card', ${bridge}::uuid, '%/s-card', 'capitalone.com', false, true, '2026-03-01T10:00:00Z')`);
      const tx = (connection: string, sourceId: string, accountId: string, amount: string, postedOn: string | null, authorizedOn: string | null, description: string, category: string | null, pending = false) =>
        db.query(sql.unsafe`
          INSERT INTO finance_transactions (connection_id, source, source_id, account_id, amount, posted_on, authorized_on, description, category, pending)
          VALUES (${connection}::uuid, 'x', ${sourceId}, ${accountId}, ${amount}::numeric, ${postedOn}::date, ${authorizedOn}::date, ${description}, ${category}, ${pending})`);
      await tx(plaid, 'p1', pChk, '-40.00', '2026-11-01', null, 'GROCER 12', 'FOOD_AND_DRINK');
      await tx(plaid, 'p2', pChk, '-7.00', null, '2026-11-20', 'KIOSK', 'subscriptions', true);
      await tx(plaid, 'p3', pCard, '-80.00', '2026-11-02', null, 'AIRLINE', 'WEIRD');
      await tx(bridge, '%/s-chk:1', sChk, '-40.00', '2026-11-02', null, 'grocer', null);
      await tx(bridge, '%/s-chk:2', sChk, '-5.00', '2026-11-03', null, 'ATM FEE', 'groceries');
      await tx(bridge, '%/s-card:1', sCard, '-80.00', '2026-11-04', null, 'AIRLINE', null);

      await scratch.migrate(Infinity);

      const rows = await db.any(sql.type(z.object({ source_id: z.string(), date: z.string().nullable(), category: z.string().nullable(), provider_category: z.string().nullable(), merged: z.boolean() }))`
        SELECT source_id, date::text, category, provider_category, merged_into IS NOT NULL AS merged FROM finance_transactions ORDER BY source_id`);
      expect(rows).toEqual([
        { source_id: '%/s-card:1', date: '2026-11-04', category: null, provider_category: null, merged: true },
        { source_id: '%/s-chk:1', date: '2026-11-02', category: null, provider_category: null, merged: true },
        { source_id: '%/s-chk:2', date: '2026-11-03', category: 'groceries', provider_category: 'groceries', merged: false },
        { source_id: 'p1', date: '2026-11-01', category: 'dining', provider_category: 'FOOD_AND_DRINK', merged: false },
        { source_id: 'p2', date: '2026-11-20', category: 'entertainment', provider_category: 'subscriptions', merged: false },
        { source_id: 'p3', date: '2026-11-02', category: 'other', provider_category: 'WEIRD', merged: false },
      ]);

      const kinds = await db.any(sql.type(z.object({ id: z.string(), type: z.string().nullable(), subtype: z.string().nullable(), balance_current: z.string().nullable() }))`
        SELECT id, type, subtype, balance_current::text FROM finance_accounts ORDER BY source_id`);
      const kindOf = (id: string) => kinds.find((row) => row.id === id);
      expect(kindOf(sChk)).toMatchObject({ type: 'depository', subtype: 'checking', balance_current: '900.00' });
      // A card's debt at the bridge is a negative balance; the catalogue's is the amount owed.
      expect(kindOf(sCard)).toMatchObject({ type: 'credit', subtype: 'credit card', balance_current: '250.00' });
      expect(kindOf(sBrokerage)).toMatchObject({ type: 'investment', subtype: 'brokerage' });
      expect(kindOf(sUnknown)).toMatchObject({ type: null, subtype: null, balance_current: '12.00' });
      expect(kindOf(pCard)).toMatchObject({ type: 'credit', balance_current: '250.00' });

      const answers = await db.any(sql.type(z.object({ second_source_id: z.string(), automatic: z.boolean(), same: z.boolean().nullable(), answered_at: z.string().nullable() }))`
        SELECT second_source_id, automatic, same, to_char(answered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') AS answered_at FROM finance_account_matches ORDER BY second_source_id`);
      expect(answers).toEqual([
        { second_source_id: '%/s-card', automatic: false, same: true, answered_at: '2026-03-01T10:00:00' },
        { second_source_id: '%/s-chk', automatic: true, same: true, answered_at: null },
      ]);

      // As an agent reads it: the ATM fee only the bridge had is there, every other real transaction once, newest date first.
      const read = await createQueryEngine({ db, direct: database.direct }).query(object('finance.transaction'), { object: 'finance.transaction', select: ['source_id', 'date'] });
      expect(read.rows.map((row) => row.source_id)).toEqual(['p2', '%/s-chk:2', 'p3', 'p1']);
    } finally {
      await database.end();
    }
  });
});
