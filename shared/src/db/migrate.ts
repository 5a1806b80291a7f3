import path from 'node:path';
import type { Logger } from 'pino';

export const MIGRATIONS_DIR = path.join(import.meta.dirname, '..', 'migrations');
export const MIGRATIONS_TABLE = 'schema_migrations';

/**
 * Applies every pending migration (SQL files in `shared/src/migrations`) with node-pg-migrate, which
 * holds an advisory lock so that two starters never migrate at once. Returns the names applied.
 */
export async function runMigrations(databaseUrl: string, log?: Logger): Promise<string[]> {
  // Loaded here, not with the module: every service imports the db barrel, only the launcher and the tools
  // migrate, and node-pg-migrate (with jiti and glob) was 1.5 MB of the idle gateway's collected heap.
  const { runner } = await import('node-pg-migrate');
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
