import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { upsertRecords } from '../cache/index.ts';
import { createDatabase, type Database } from '../db/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';
import { NAMED_STATEMENT_LIMIT } from './statement-names.ts';

// The engine's statements are named prepared statements, so Postgres parses a text once per connection.
// One connection here for the engine's reads, so what it prepared is what pg_prepared_statements lists there.
const testEnv = useTestEnvironment();
const transactions = findObject('finance.transaction') as ObjectDef;
let database: Database;
let engine: QueryEngine;

const Prepared = z.array(z.object({ statement: z.string(), runs: z.number() }));
const prepared = async () => {
  const query = sql.fragment`SELECT statement, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements`;
  return Prepared.parse(await database.direct.read({ sql: query.sql, values: query.values }));
};

beforeAll(async () => {
  const connection = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, {
    object: 'finance.transaction',
    connectionId: connection,
    source: 'plaid',
    records: Array.from({ length: 30 }, (_, i) => ({ source_id: `t${i}`, posted_on: `2026-03-${String(1 + i).padStart(2, '0')}`, amount: `-${i}.50`, currency: 'EUR', description: `purchase ${i}`, provider_category: i % 2 ? 'dining' : 'travel', pending: false })),
  });
  database = await createDatabase(testEnv.databaseUrl, { maximumPoolSize: 1 });
  engine = createQueryEngine({ db: database.pool, direct: database.direct });
});
afterAll(() => database.end());

describe('query engine statements are prepared once per connection', () => {
  it('runs the same page twice through one prepared statement, with the same answer', async () => {
    const input = { object: 'finance.transaction', where: [{ field: 'category', op: 'eq', value: 'dining' }], limit: 5 };
    const first = await engine.query(transactions, input);
    const second = await engine.query(transactions, input);
    expect(first.rows).toHaveLength(5);
    expect(second.rows).toEqual(first.rows);
    const statements = (await prepared()).filter((row) => row.statement.includes('FROM "finance_transactions"'));
    expect(statements).toHaveLength(1);
    expect(statements[0]?.runs).toBe(2);
  });

  it(`names at most ${NAMED_STATEMENT_LIMIT} texts and runs the others unnamed, each with its own columns (and always the id)`, async () => {
    const fields = transactions.fields.filter((field) => !field.computed && field.name !== 'id').map((field) => field.name);
    const pairs = fields.flatMap((a, i) => fields.slice(i + 1).map((b) => [a, b]));
    expect(pairs.length).toBeGreaterThan(NAMED_STATEMENT_LIMIT + 10);
    for (const round of [1, 2]) {
      for (const select of pairs) {
        const page = await engine.query(transactions, { object: 'finance.transaction', select, limit: 3 });
        expect(page.rows.map((row) => Object.keys(row)), `${select.join(', ')}, round ${round}`).toEqual(Array(3).fill(['id', ...select]));
      }
    }
    const statements = await prepared();
    expect(statements).toHaveLength(NAMED_STATEMENT_LIMIT);
    // The first test's statement and the 63 named here, each run twice; the texts past the limit left none.
    expect(statements.map((row) => row.runs)).toEqual(Array(NAMED_STATEMENT_LIMIT).fill(2));
  });
});
