import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogueObject, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { upsertRecords } from '../cache/index.ts';
import { createAccountMatchService } from '../finance/index.ts';
import { type ObjectDef } from '../sectors/index.ts';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';

// Spec 2.1 and design 8.3: an account two connections both deliver appears once, from the connection created
// first, and so do its holdings ("its holdings are that connection's"); rows of other accounts, and holdings
// that name no account, are all read. Two connections: a checking account both report with the same last 4
// (merged without asking), and a savings account only the later one has.
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const object = catalogueObject;
const accounts = object('finance.account');
const holdings = object('finance.holding');
const accountIds: Record<string, string> = {};

async function account(connectionId: string, source: string, record: Record<string, unknown>): Promise<void> {
  await upsertRecords(testEnv.db, { object: 'finance.account', connectionId, source, records: [{ currency: 'USD', ...record }] });
  accountIds[String(record.source_id)] = await testEnv.db.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM finance_accounts WHERE connection_id = ${connectionId}::uuid AND source_id = ${String(record.source_id)}`);
}

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const early = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid', displayName: 'Aggregator' });
  const late = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'simplefin', displayName: 'Bridge' });
  await account(early, 'plaid', { source_id: 'e-chk', institution_domain: 'chase.com', name: 'Total Checking', mask: '4821', type: 'depository', subtype: 'checking' });
  await account(late, 'simplefin', { source_id: 'l-chk', institution_domain: 'chase.com', name: 'CHASE CHECKING 4821', mask: '4821', type: 'depository', subtype: 'checking' });
  await account(late, 'simplefin', { source_id: 'l-sav', institution_domain: 'ally.com', name: 'Savings', mask: '7700', type: 'depository', subtype: 'savings' });
  const holding = (sourceId: string, accountId: string | null) => ({ source_id: sourceId, account_id: accountId, security_name: sourceId, quantity: '1', value: '10.00', currency: 'USD' });
  await upsertRecords(testEnv.db, { object: 'finance.holding', connectionId: early, source: 'plaid', records: [holding('h-early', accountIds['e-chk'] ?? null), holding('h-loose', null)] });
  await upsertRecords(testEnv.db, { object: 'finance.holding', connectionId: late, source: 'simplefin', records: [holding('h-late', accountIds['l-chk'] ?? null), holding('h-savings', accountIds['l-sav'] ?? null)] });
  await createAccountMatchService({ db: testEnv.db }).reconcile();
});

const sourceIds = async (on: ObjectDef) =>
  (await engine.query(on, { object: on.name, select: ['source_id'], limit: 100 })).rows.map((row) => String(row.source_id)).sort();

describe('the rows no read sees: a merged account and its holdings (spec 2.1)', () => {
  it('reads the merged account once, from the connection created first, and every other account', async () => {
    expect(await sourceIds(accounts)).toEqual(['e-chk', 'l-sav']);
  });

  it('reads the holdings of the first copy, of other accounts and of no account, and not those of the merged-away copy', async () => {
    expect(await sourceIds(holdings)).toEqual(['h-early', 'h-loose', 'h-savings']);
  });

  it('leaves the same rows out of aggregates and of get_record', async () => {
    const total = await engine.query(holdings, { object: 'finance.holding', aggregate: { metrics: [{ fn: 'count' }, { fn: 'sum', field: 'value' }] } });
    expect(total.rows).toEqual([{ count: 3, sum_value: '30.00' }]);
    expect(await engine.getRecord(accounts, accountIds['l-chk'] ?? '')).toBeNull();
    expect(await engine.getRecord(accounts, accountIds['e-chk'] ?? '')).toMatchObject({ source_id: 'e-chk' });
  });
});
