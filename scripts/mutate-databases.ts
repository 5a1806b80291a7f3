import pg from 'pg';
import type { TestProject } from 'vitest/node';

/**
 * Global setup of mutation runs, after test/global-setup.ts (vitest.mutate.config.ts): the databases that
 * scripts/mutate-test-environment.ts reuses across a run's workers outlive them, so they are dropped here when
 * the run ends, and at the start, those a killed run left behind (their template is gone).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { pgServerUrl, templateDatabase } = project.getProvidedContext();
  await dropDatabases(pgServerUrl, (name, templates) => !templates.has(`pcg_tpl_${name.slice('pcg_m_'.length).replace(/_\d+_\d+$/, '')}`));
  const prefix = reusedDatabasePrefix(templateDatabase);
  return () => dropDatabases(pgServerUrl, (name) => name.startsWith(prefix));
}

async function dropDatabases(serverUrl: string, drop: (name: string, templates: Set<string>) => boolean): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ name: string }>(`SELECT datname AS name FROM pg_database WHERE datname LIKE 'pcg\\_%'`);
    const templates = new Set(rows.map((row) => row.name).filter((name) => name.startsWith('pcg_tpl_')));
    for (const { name } of rows) {
      if (name.startsWith('pcg_m_') && drop(name, templates)) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

/** The name prefix of a run's reused databases, from its template's (unique per vitest run). */
export function reusedDatabasePrefix(template: string): string {
  return `pcg_m_${template.replace(/^pcg_tpl_/, '')}_`;
}
