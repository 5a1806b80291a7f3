import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '../cache/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';
import { isDataException, QueryError } from './query-errors.ts';

// Issue 12 item 2: a Postgres data exception (SQLSTATE class 22) that gets past validation is a
// refusal naming the inputs, never "try again later". Validation leaves no value that Postgres
// refuses, so this file's own database serves health_samples through a view whose `value` raises one:
// division by zero (22012, kept with its code) and bad text for a number (22P02, which slonik re-wraps).
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const sample = findObject('health.sample') as ObjectDef;

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const health = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'health-auto-export' });
  await upsertRecords(testEnv.db, {
    object: 'health.sample',
    connectionId: health,
    source: 'health-auto-export',
    records: [
      ...['ok', 'divide', 'cast'].map((id) => ({ source_id: id, metric: 'step_count', value: 1, unit: 'count' })),
      ...['l1', 'l2'].map((id) => ({ source_id: id, metric: 'late', value: 1, unit: 'count' })),
    ],
  });
  await testEnv.db.query(sql.unsafe`ALTER TABLE health_samples RENAME TO health_samples_stored`);
  await testEnv.db.query(sql.unsafe`
    CREATE VIEW health_samples AS
    SELECT id, connection_id, source, source_id, synced_at, metric,
           CASE WHEN source_id LIKE 'divide%' THEN value / 0 WHEN source_id LIKE 'cast%' THEN unit::double precision ELSE value END AS value,
           unit, start_at, end_at, device
    FROM health_samples_stored`);
});

const query = (input: Record<string, unknown>) => engine.query(sample, { object: sample.name, ...input });

describe('a data exception that slips past validation (issue 12 item 2)', () => {
  it.each([
    ['22012', 'divide'],
    ['22P02', 'cast'],
  ])('refuses %s with a QueryError naming the filters that reached the database', async (_code, sourceId) => {
    const attempt = query({ where: [{ field: 'metric', op: 'eq', value: 'step_count' }, { field: 'source_id', op: 'eq', value: sourceId }] });
    await expect(attempt).rejects.toThrow(
      new QueryError("where.0 (metric), where.1 (source_id): the database cannot use a value given here; check it against the field's type in get_schema"),
    );
  });

  it('names the object when no value of the request reached the database', async () => {
    await expect(query({ select: ['value'] })).rejects.toThrow(
      new QueryError('object: a value stored in health.sample cannot be read as its field\'s type; narrow the query with where or select'),
    );
  });

  it('names the cursor too', async () => {
    const input = { select: ['value'], where: [{ field: 'metric', op: 'eq', value: 'late' }], order_by: [{ field: 'source_id', direction: 'desc' }], limit: 1 };
    const first = await query(input);
    expect(first).toMatchObject({ row_count: 1, has_more: true });
    // A bad row arrives between the pages, after the cursor's row.
    await testEnv.db.query(sql.unsafe`
      INSERT INTO health_samples_stored (connection_id, source, source_id, metric, value, unit)
      SELECT connection_id, source, 'divide-late', 'late', 1, 'count' FROM health_samples_stored WHERE source_id = 'l1'`);
    await expect(query({ ...input, cursor: first.next_cursor })).rejects.toThrow(
      new QueryError("where.0 (metric), cursor: the database cannot use a value given here; check it against the field's type in get_schema"),
    );
  });

  it('refuses an aggregate the same way', async () => {
    await expect(query({ aggregate: { metrics: [{ fn: 'sum', field: 'value' }] } })).rejects.toBeInstanceOf(QueryError);
  });

  it('recognises only class 22, not other database errors', async () => {
    const caught = (attempt: Promise<unknown>) => attempt.then(() => undefined, (error: unknown) => error);
    expect(isDataException(await caught(testEnv.db.query(sql.unsafe`SELECT '2026-02-30'::date`)))).toBe(true);
    expect(isDataException(await caught(testEnv.db.query(sql.unsafe`SELECT 'x'::int`)))).toBe(true);
    expect(isDataException(await caught(testEnv.db.query(sql.unsafe`SELECT 1 / 0`)))).toBe(true);
    expect(isDataException(await caught(testEnv.db.query(sql.unsafe`SELECT * FROM no_such_table`)))).toBe(false);
    expect(isDataException(new Error('plain'))).toBe(false);
  });
});
