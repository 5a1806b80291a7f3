import { sql } from 'slonik';
import { z } from 'zod';
import { createDatabase, type Database, type PoolOptions } from './create-database.ts';

/** Opens the pools and proves the database answers, so a service fails at start rather than on first use. */
export async function openDatabase(databaseUrl: string, options?: PoolOptions): Promise<Database> {
  const database = await createDatabase(databaseUrl, options);
  try {
    await database.pool.oneFirst(sql.type(z.object({ ok: z.number() }))`SELECT 1::int AS ok`);
  } catch (error) {
    await database.end();
    throw error;
  }
  return database;
}

/** The database name of a URL, for log lines (never the password). */
export function describeDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  return `${url.hostname}:${url.port || '5432'}/${decodeURIComponent(url.pathname.slice(1))}`;
}
