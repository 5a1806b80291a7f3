import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { isAlive } from './local-services/keeper-state.ts';

/**
 * Global setup of mutation runs, after test/global-setup.ts (vitest.mutate.config.ts): the databases that
 * scripts/mutate-test-environment.ts reuses across a run's workers outlive them, so they are dropped here when
 * the run ends, and at the start, those a killed run left behind (the process named in their template's name,
 * `pcg_tpl_<pid>_…`, is gone).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { pgServerUrl, templateDatabase } = project.getProvidedContext();
  // Process ids name processes of this machine only: a server elsewhere may hold another machine's runs.
  if (onThisMachine(pgServerUrl)) await dropDatabases(pgServerUrl, (name) => !isAlive(Number(name.split('_')[2])));
  const prefix = reusedDatabasePrefix(templateDatabase);
  return () => dropDatabases(pgServerUrl, (name) => name.startsWith(prefix));
}

function onThisMachine(serverUrl: string): boolean {
  return ['127.0.0.1', 'localhost', '[::1]', ''].includes(new URL(serverUrl).hostname);
}

async function dropDatabases(serverUrl: string, drop: (name: string) => boolean): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ name: string }>(`SELECT datname AS name FROM pg_database WHERE datname LIKE 'pcg\\_m\\_%'`);
    for (const { name } of rows) {
      if (drop(name)) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

/** The name prefix of a run's reused databases, from its template's (unique per vitest run). */
export function reusedDatabasePrefix(template: string): string {
  return `pcg_m_${template.replace(/^pcg_tpl_/, '')}_`;
}
