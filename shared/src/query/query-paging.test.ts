import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '../cache/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';
import type { QueryResult } from './query-input.ts';

// Issue 12 item 1: keyset paging over values that carry microseconds. The wire shows milliseconds, so a
// cursor built from the served value would repeat rows (asc) or skip them (desc).
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const sample = findObject('health.sample') as ObjectDef;
const transaction = findObject('finance.transaction') as ObjectDef;
/** The case as reported: 1,154 transactions sharing two synced_at values. */
const REPORTED = 1_154;
const account = findObject('finance.account') as ObjectDef;
const TOTAL = 307;
const LIMIT = 50;

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const health = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'health-auto-export' });
  await upsertRecords(testEnv.db, {
    object: 'health.sample',
    connectionId: health,
    source: 'health-auto-export',
    records: Array.from({ length: TOTAL }, (_, i) => ({ source_id: `s${i}`, metric: 'step_count', value: i, unit: 'count' })),
  });
  // Two distinct microsecond instants inside the same millisecond for synced_at, three for start_at
  // (one of them null), and values a few microseconds apart for end_at.
  await testEnv.db.query(sql.unsafe`
    UPDATE health_samples SET
      synced_at = CASE WHEN source_id::text LIKE '%1' THEN '2026-03-01T10:00:00.123456Z'::timestamptz ELSE '2026-03-01T10:00:00.123789Z'::timestamptz END,
      start_at = CASE substring(source_id from 2)::int % 3 WHEN 0 THEN '2026-03-01T09:00:00.000001Z'::timestamptz
                                                           WHEN 1 THEN '2026-03-01T09:00:00.000002Z'::timestamptz END,
      end_at = '2026-03-01T09:30:00Z'::timestamptz + (substring(source_id from 2)::int % 7) * interval '1 microsecond'`);
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, {
    object: 'finance.account',
    connectionId: bank,
    source: 'plaid',
    records: Array.from({ length: 120 }, (_, i) => ({ source_id: `a${i}`, name: `Account ${i}`, currency: 'EUR' })),
  });
  await upsertRecords(testEnv.db, {
    object: 'finance.transaction',
    connectionId: bank,
    source: 'plaid',
    records: Array.from({ length: REPORTED }, (_, i) => ({ source_id: `t${i}`, amount: '-1.00', currency: 'EUR', pending: false })),
  });
  await testEnv.db.query(sql.unsafe`
    UPDATE finance_transactions SET synced_at = CASE WHEN source_id < 't5' THEN '2026-05-02T08:15:42.318552Z'::timestamptz
                                                     ELSE '2026-05-02T08:15:43.907114Z'::timestamptz END`);
  await testEnv.db.query(sql.unsafe`
    UPDATE finance_accounts SET
      balance_as_of = '2026-03-01T00:00:00.000500Z'::timestamptz + (substring(source_id from 2)::int % 2) * interval '1 microsecond',
      consent_expires_at = '2026-06-01T00:00:00.999999Z'::timestamptz`);
});

async function walk(object: ObjectDef, orderBy: Array<{ field: string; direction: 'asc' | 'desc' }>, total = TOTAL) {
  const seen: string[] = [];
  let cursor: string | undefined;
  let last: QueryResult | undefined;
  // More pages than the rows could fill means the walk loops.
  for (let pages = 0; pages <= Math.ceil(total / LIMIT) + 1; pages += 1) {
    last = await engine.query(object, { object: object.name, order_by: orderBy, limit: LIMIT, cursor });
    seen.push(...last.rows.map((row) => row.id as string));
    cursor = last.next_cursor;
    if (!cursor) break;
  }
  return { seen, last };
}

describe('paging over microsecond timestamps (issue 12 item 1)', () => {
  it.each([
    ['synced_at asc', [{ field: 'synced_at', direction: 'asc' }]],
    ['synced_at desc', [{ field: 'synced_at', direction: 'desc' }]],
    ['start_at asc (nullable)', [{ field: 'start_at', direction: 'asc' }]],
    ['start_at desc (nullable)', [{ field: 'start_at', direction: 'desc' }]],
    ['end_at desc then synced_at asc', [{ field: 'end_at', direction: 'desc' }, { field: 'synced_at', direction: 'asc' }]],
    ['value desc then synced_at desc', [{ field: 'value', direction: 'desc' }, { field: 'synced_at', direction: 'desc' }]],
  ] as const)('walks every row exactly once: %s', async (_label, orderBy) => {
    const { seen, last } = await walk(sample, [...orderBy]);
    expect(seen).toHaveLength(TOTAL);
    expect(new Set(seen).size).toBe(TOTAL);
    expect(last?.has_more).toBe(false);
    expect(last?.next_cursor).toBeUndefined();
  });

  it.each([
    ['balance_as_of asc', [{ field: 'balance_as_of', direction: 'asc' }]],
    ['balance_as_of desc', [{ field: 'balance_as_of', direction: 'desc' }]],
    ['consent_expires_at desc', [{ field: 'consent_expires_at', direction: 'desc' }]],
  ] as const)('walks every account exactly once: %s', async (_label, orderBy) => {
    const { seen, last } = await walk(account, [...orderBy]);
    expect(seen).toHaveLength(120);
    expect(new Set(seen).size).toBe(120);
    expect(last?.has_more).toBe(false);
  });

  it.each(['asc', 'desc'] as const)('walks the reported 1,154 transactions exactly once, order_by synced_at %s, limit 50', async (direction) => {
    const { seen, last } = await walk(transaction, [{ field: 'synced_at', direction }], REPORTED);
    expect(seen).toHaveLength(REPORTED);
    expect(new Set(seen).size).toBe(REPORTED);
    expect(last?.has_more).toBe(false);
  });

  it('still serves the instants with milliseconds', async () => {
    const page = await engine.query(sample, { object: sample.name, select: ['synced_at'], limit: 1 });
    expect(page.rows[0]?.synced_at).toMatch(/^2026-03-01T10:00:00\.123Z$/);
  });
});
