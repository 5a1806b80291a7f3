import path from 'node:path';
import pg from 'pg';
import { createConnectionQueries } from '@pcg/shared/connections';
import { ensureDatabase, openDatabase, runMigrations } from '@pcg/shared/db';
import { resolvePostgres, withDatabase } from '../local-services/index.ts';

/**
 * A migrated database of a benchmark's own on the Postgres `npm start` would use; `drop()` removes it
 * (and ends its lease on an embedded Postgres: shared with a running `npm start`, stopped when the bench
 * was its only user).
 */
export async function openBenchDatabase(name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const server = await resolvePostgres({ env: process.env, dataDir: path.resolve(import.meta.dirname, '../..', process.env.DATA_DIR || 'data'), log: console.log });
  const url = withDatabase(server.url, name);
  const admin = new pg.Client({ connectionString: withDatabase(server.url, 'postgres') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  await ensureDatabase(url);
  await runMigrations(url);
  return {
    url,
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      await admin.end();
      await server.stop?.();
    },
  };
}

/** The one finance connection a benchmark's rows belong to, made the way the Console makes one. */
export const BENCH_CONNECTION_ID = '00000000-0000-0000-0000-00000000b0b0';

export async function insertBenchConnection(url: string): Promise<void> {
  const database = await openDatabase(url);
  try {
    await createConnectionQueries(database.pool).insert({
      id: BENCH_CONNECTION_ID,
      provider: 'bench',
      sector: 'finance',
      displayName: 'Benchmark data',
      signInId: null,
      ingestSecretHash: null,
      syncIntervalMinutes: null,
    });
  } finally {
    await database.end();
  }
}

/**
 * `rows` finance transactions of the bench connection, a fifth of them in each of five categories, over
 * 700 days, then ANALYZE: the data bench:mcp and bench:tool-path read.
 */
export async function insertBenchTransactions(raw: Pick<pg.Pool, 'query'>, rows: number): Promise<void> {
  await raw.query(
    `INSERT INTO finance_transactions (connection_id, source, source_id, posted_on, amount, currency, description, provider_category, pending)
     SELECT '${BENCH_CONNECTION_ID}', 'bench', 'tx-' || g, date '2026-11-22' - (g % 700), round(((g::bigint * 7919) % 40000 - 30000) / 100.0, 2),
            'USD', 'PURCHASE ' || g, (ARRAY['groceries','transport','dining','shopping','travel'])[1 + g % 5], false
     FROM generate_series(1, $1::int) AS g`,
    [rows],
  );
  await raw.query('ANALYZE finance_transactions');
}
