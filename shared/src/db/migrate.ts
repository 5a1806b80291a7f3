import path from 'node:path';
import { runner } from 'node-pg-migrate';
import type { Logger } from 'pino';

export const MIGRATIONS_DIR = path.join(import.meta.dirname, '..', 'migrations');
export const MIGRATIONS_TABLE = 'schema_migrations';

/**
 * Applies every pending migration (SQL files in `shared/src/migrations`) with node-pg-migrate, which
 * holds an advisory lock so that two starters never migrate at once. Returns the names applied.
 */
export async function runMigrations(databaseUrl: string, log?: Logger): Promise<string[]> {
  const applied = await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    migrationsTable: MIGRATIONS_TABLE,
    direction: 'up',
    checkOrder: true,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    log: (message: string) => log?.debug({ migration: message }, 'migration progress'),
    verbose: false,
  });
  return applied.map((migration) => migration.name);
}
