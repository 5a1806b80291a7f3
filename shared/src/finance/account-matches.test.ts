import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogueObject, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { deleteRecords, upsertRecords } from '../cache/index.ts';
import { createQueryEngine } from '../query/index.ts';
import { knownValues } from '../reads/known-values.ts';
import { createAccountMatchService } from './account-matches-service.ts';

// The read path of a merged account through direct cache writes, two connections of two providers:
// pages, aggregates, get_record and get_schema's known values all leave the merged copy out.
const testEnv = useTestEnvironment();
const engine = () => createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
const object = catalogueObject;
let early = '';
let late = '';

async function write(connectionId: string, source: string, account: Record<string, unknown>, transactions: Array<Record<string, unknown>>): Promise<void> {
  await upsertRecords(testEnv.db, { object: 'finance.account', connectionId, source, records: [account] });
  const accountId = await testEnv.db.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM finance_accounts WHERE connection_id = ${connectionId}::uuid AND source_id = ${String(account.source_id)}`);
  await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId, source, records: transactions.map((tx) => ({ pending: false, ...tx, account_id: accountId })) });
}

const sum = async () =>
  (await engine().query(object('finance.transaction'), { object: 'finance.transaction', aggregate: { group_by: ['category'], metrics: [{ fn: 'sum', field: 'amount' }, { fn: 'count' }] } })).rows;

beforeAll(async () => {
  early = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid', displayName: 'Aggregator' });
  late = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'simplefin', displayName: 'Bridge' });
  await write(early, 'plaid', { source_id: 'p-chk', institution_domain: 'chase.com', name: 'Checking', mask: '4821' }, [
    { source_id: 'p1', amount: '-40.00', posted_on: '2026-11-01', provider_category: 'groceries' },
  ]);
  await write(late, 'simplefin', { source_id: 's-chk', institution_domain: 'chase.com', name: 'CHK ••4821' }, [
    { source_id: 's1', amount: '-40.00', posted_on: '2026-11-01', provider_category: 'groceries' },
    { source_id: 's2', amount: '-5.00', posted_on: '2026-11-02', provider_category: 'bridge-only' },
  ]);
  await createAccountMatchService({ db: testEnv.db }).reconcile();
});

describe('a merged account in the read path', () => {
  it('is read once, from the connection created first, in pages, aggregates, get_record and known values; a transaction only the later copy has is read too', async () => {
    const accounts = await engine().query(object('finance.account'), { object: 'finance.account' });
    expect(accounts.rows.map((row) => [row.connection_id, row.source_id])).toEqual([[early, 'p-chk']]);
    // s1 is p1 (design 8.3: same amount, date, description); s2 only the bridge has, in the set as `other`.
    expect(await sum()).toEqual([
      { category: 'groceries', sum_amount: '-40.00', count: 1 },
      { category: 'other', sum_amount: '-5.00', count: 1 },
    ]);
    const hidden = await testEnv.db.oneFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM finance_accounts WHERE source_id = 's-chk'`);
    expect(await engine().getRecord(object('finance.account'), hidden)).toBeNull();
    expect((await knownValues(testEnv.db, object('finance.transaction'))).category?.values).toEqual(['groceries', 'other']);
  });

  it('reads the later copy again once the earlier one is gone from the cache', async () => {
    // As a connector removes an account that vanished: with its transactions.
    await deleteRecords(testEnv.db, { object: 'finance.transaction', connectionId: early, sourceIds: ['p1'] });
    await deleteRecords(testEnv.db, { object: 'finance.account', connectionId: early, sourceIds: ['p-chk'] });
    expect((await engine().query(object('finance.account'), { object: 'finance.account' })).rows.map((row) => row.source_id)).toEqual(['s-chk']);
    expect(await sum()).toEqual(
      expect.arrayContaining([
        { category: 'groceries', sum_amount: '-40.00', count: 1 },
        { category: 'other', sum_amount: '-5.00', count: 1 },
      ]),
    );
  });
});
