import { beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '../cache/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';
import type { QueryResult } from './query-input.ts';

// Issue 20, aggregates that answer questions: groups ordered by a metric with a limit (top N), and a
// grouped result that is cut off pages with next_cursor like rows do.
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const transaction = findObject('finance.transaction') as ObjectDef;
const MERCHANTS = 230;
/** Merchant i spends i + 1 times 10.00; ties at the same total come in pairs, so the order needs its tiebreak. */
const spentBy = (i: number) => (Math.floor(i / 2) + 1) * 10;
const q = (input: Record<string, unknown>) => engine.query(transaction, { object: 'finance.transaction', ...input });

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  const records = Array.from({ length: MERCHANTS }, (_, i) => [
    { source_id: `a${i}`, merchant_name: `Shop ${String(i).padStart(3, '0')}`, amount: (-spentBy(i) / 2).toFixed(2), pending: false },
    { source_id: `b${i}`, merchant_name: `Shop ${String(i).padStart(3, '0')}`, amount: (-spentBy(i) / 2).toFixed(2), pending: false },
  ]).flat();
  records.push({ source_id: 'none', merchant_name: null as unknown as string, amount: '-1.00', pending: false });
  await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId: bank, source: 'plaid', records });
});

describe('top N and paged groups', () => {
  it('orders groups by a metric and cuts at limit: the 3 biggest spenders', async () => {
    const result = await q({ aggregate: { group_by: ['merchant_name'], metrics: [{ fn: 'sum', field: 'amount' }] }, order_by: [{ field: 'sum_amount', direction: 'asc' }], limit: 3 });
    expect(result.rows).toEqual([
      { merchant_name: 'Shop 228', sum_amount: '-1150.00' },
      { merchant_name: 'Shop 229', sum_amount: '-1150.00' },
      { merchant_name: 'Shop 226', sum_amount: '-1140.00' },
    ]);
    expect(result).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
  });

  it('pages every group once, in order, with next_cursor (never a bare has_more)', async () => {
    const seen: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page += 1) {
      const result: QueryResult = await q({ aggregate: { group_by: ['merchant_name'], metrics: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }] }, order_by: [{ field: 'sum_amount', direction: 'desc' }], limit: 40, cursor });
      expect(result.has_more).toBe(result.next_cursor !== undefined);
      seen.push(...result.rows.map((row) => row.merchant_name));
      if (!result.has_more) break;
      cursor = result.next_cursor;
    }
    expect(seen).toHaveLength(MERCHANTS + 1);
    expect(new Set(seen).size).toBe(MERCHANTS + 1);
    // sum desc: the group with no merchant spent 1.00 (-1.00 is the largest sum); ties by merchant name ascending.
    expect(seen.slice(0, 4)).toEqual([null, 'Shop 000', 'Shop 001', 'Shop 002']);
    expect(seen.slice(-2)).toEqual(['Shop 228', 'Shop 229']);
  });

  it('refuses a cursor of one grouping on another', async () => {
    const first = await q({ aggregate: { group_by: ['merchant_name'], metrics: [{ fn: 'count' }] }, limit: 5 });
    await expect(q({ aggregate: { group_by: ['merchant_name'], metrics: [{ fn: 'sum', field: 'amount' }] }, limit: 5, cursor: first.next_cursor })).rejects.toThrow('it belongs to another query');
  });
});
