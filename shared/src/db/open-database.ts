import { sql } from 'slonik';
import { z } from 'zod';
import { createPool, type DatabasePool, type PoolOptions } from './create-pool.ts';

/** Opens the pool and proves the database answers, so a service fails at start rather than on first use. */
export async function openDatabase(databaseUrl: string, options?: PoolOptions): Promise<DatabasePool> {
  const pool = await createPool(databaseUrl, options);
  try {
    await pool.oneFirst(sql.type(z.object({ ok: z.number() }))`SELECT 1::int AS ok`);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return pool;
}

/** The database name of a URL, for log lines (never the password). */
export function describeDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  return `${url.hostname}:${url.port || '5432'}/${decodeURIComponent(url.pathname.slice(1))}`;
}
