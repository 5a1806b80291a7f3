import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { runner } from 'node-pg-migrate';
import { afterAll, inject } from 'vitest';
import { MIGRATIONS_DIR, MIGRATIONS_TABLE } from '@pcg/shared/db';
import { asAdmin } from './test-environment.ts';

/**
 * An empty database of the test file's own, migrated step by step, to test what a migration does to rows
 * written before it: `migrateBefore(name)` applies every migration before `name`, `migrate(count)` the next
 * `count` (Infinity: all that are left). The database is created on first use and dropped after the file.
 */
export function useMigrationDatabase() {
  const serverUrl = inject('pgServerUrl');
  const database = `pcg_m_${randomBytes(6).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  let created = false;
  afterAll(async () => {
    if (created) await asAdmin(serverUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
  });

  async function migrate(count: number): Promise<string[]> {
    if (!created) {
      await asAdmin(serverUrl, `CREATE DATABASE ${pg.escapeIdentifier(database)}`);
      created = true;
    }
    const applied = await runner({ databaseUrl: url.toString(), dir: MIGRATIONS_DIR, migrationsTable: MIGRATIONS_TABLE, direction: 'up', count, log: () => undefined });
    return applied.map((migration) => migration.name);
  }

  return {
    url: url.toString(),
    migrate,
    /** Applies every migration before the one named (its file name); returns how many that was. */
    async migrateBefore(name: string): Promise<number> {
      const index = readdirSync(MIGRATIONS_DIR).filter((file) => file.endsWith('.sql')).sort().indexOf(name);
      if (index < 0) throw new Error(`no migration ${name} in ${MIGRATIONS_DIR}`);
      await migrate(index);
      return index;
    },
  };
}
