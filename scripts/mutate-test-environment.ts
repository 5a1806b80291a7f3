import pg from 'pg';
import { inject } from 'vitest';
import { reusedDatabasePrefix } from './mutate-databases.ts';
import { useTestEnvironment as useClonedTestEnvironment, useTestEnvironmentOn, withDatabase, type TestEnvironment } from '../testkit/src/testing/index.ts';

export * from '../testkit/src/testing/index.ts';

/**
 * The test environment of mutation runs (vitest.mutate.config.ts puts it in place of @pcg/testkit/testing).
 *
 * Stryker runs a mutant's tests in a fresh vitest worker, so every file that asks for a database would clone
 * the template and drop the clone again on every mutant: on the shared 2-core machine that was about 0.6 s and
 * 1-2 s of each mutant's 3 s. With PCG_MUTATE_REUSE_DATABASES=1 (set by scripts/mutate.ts for the shards that
 * ask for it) a file instead takes a database that outlives the worker, one per slot of the runner, and puts it
 * back into the template's state before its tests: every table emptied and the template's own rows (the
 * migrations, the operator, the chain's genesis link) and sequence values written back. A file that changed the
 * schema (renamed a table, created a view) leaves a fingerprint the template does not have, and its database is
 * dropped and cloned afresh. What one file writes is therefore never seen by the next, as with a clone per file.
 * scripts/mutate-databases.ts drops the databases when the run ends.
 */
export function useTestEnvironment(): TestEnvironment {
  return process.env.PCG_MUTATE_REUSE_DATABASES === '1' ? useReusedTestEnvironment() : useClonedTestEnvironment();
}

/** Slots in use in this worker: one per file whose tests are running (files of one worker run one at a time). */
const slotsInUse = new Set<number>();

function useReusedTestEnvironment(): TestEnvironment {
  const serverUrl = inject('pgServerUrl');
  const template = inject('templateDatabase');
  let slot: number | undefined;
  const databaseName = (taken: number) => `${reusedDatabasePrefix(template)}${process.env.VITEST_POOL_ID ?? '1'}_${taken}`;
  return useTestEnvironmentOn({
    url() {
      if (slot === undefined) throw new Error('databaseUrl is available only inside tests and hooks');
      return withDatabase(serverUrl, databaseName(slot));
    },
    async prepare() {
      let free = 0;
      while (slotsInUse.has(free)) free++;
      slotsInUse.add(free);
      slot = free;
      await preparePristineDatabase(serverUrl, template, databaseName(free));
    },
    async release() {
      if (slot !== undefined) slotsInUse.delete(slot);
    },
  });
}

/** What a fresh clone holds, kept as the database's comment: its schema's fingerprint, its rows and its sequences. */
type Pristine = { fingerprint: string; rows: Record<string, unknown[]>; sequences: Record<string, { last_value: string | null; is_called: boolean }> };

/** The public schema's shape: tables, views, columns, constraints, indexes, triggers and functions. */
const FINGERPRINT = `
  SELECT md5(coalesce(string_agg(item, E'\\n' ORDER BY item), '')) AS fingerprint FROM (
    SELECT 'n ' || nspname AS item FROM pg_namespace WHERE nspname NOT LIKE 'pg_temp_%' AND nspname NOT LIKE 'pg_toast_temp_%'
    UNION ALL
    SELECT 'c ' || c.relname || ' ' || c.relkind::text || ' ' || CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) ELSE '' END
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
    UNION ALL
    SELECT 'a ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'k ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT 't ' || tgrelid::regclass::text || ' ' || tgname || ' ' || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL
    SELECT 'f ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
  ) AS items`;

async function preparePristineDatabase(serverUrl: string, template: string, databaseName: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ comment: string | null }>(
      'SELECT shobj_description(oid, $1) AS comment FROM pg_database WHERE datname = $2',
      ['pg_database', databaseName],
    );
    const comment = rows[0]?.comment;
    if (comment && (await resetToPristine(serverUrl, databaseName, JSON.parse(comment) as Pristine))) return;
    if (rows.length > 0) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(databaseName)} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(databaseName)} TEMPLATE ${pg.escapeIdentifier(template)}`);
    const pristine = await readPristine(serverUrl, databaseName);
    await admin.query(`COMMENT ON DATABASE ${pg.escapeIdentifier(databaseName)} IS ${pg.escapeLiteral(JSON.stringify(pristine))}`);
  } finally {
    await admin.end();
  }
}

/** Reads what a fresh clone holds. */
async function readPristine(serverUrl: string, databaseName: string): Promise<Pristine> {
  const client = new pg.Client({ connectionString: withDatabase(serverUrl, databaseName) });
  await client.connect();
  try {
    const fingerprint = (await client.query<{ fingerprint: string }>(FINGERPRINT)).rows[0]?.fingerprint ?? '';
    const rows: Pristine['rows'] = {};
    for (const table of await tablesOf(client)) {
      const content = await client.query<{ row: unknown }>(`SELECT row_to_json(t) AS row FROM ${pg.escapeIdentifier(table)} t`);
      if (content.rows.length > 0) rows[table] = content.rows.map((row) => row.row);
    }
    const sequences: Pristine['sequences'] = {};
    const named = await client.query<{ name: string }>(`SELECT sequencename AS name FROM pg_sequences WHERE schemaname = 'public'`);
    for (const { name } of named.rows) {
      const state = await client.query<{ last_value: string | null; is_called: boolean }>(`SELECT last_value, is_called FROM ${pg.escapeIdentifier(name)}`);
      const value = state.rows[0];
      if (value) sequences[name] = value;
    }
    return { fingerprint, rows, sequences };
  } finally {
    await client.end();
  }
}

/** Puts a reused database back into its pristine state; false when its schema changed and it must be cloned again. */
async function resetToPristine(serverUrl: string, databaseName: string, pristine: Pristine): Promise<boolean> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    // Like DROP … WITH (FORCE): a session a killed worker left behind must not hold a lock on a table.
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [databaseName]);
  } finally {
    await admin.end();
  }
  const client = new pg.Client({ connectionString: withDatabase(serverUrl, databaseName) });
  await client.connect();
  try {
    const fingerprint = (await client.query<{ fingerprint: string }>(FINGERPRINT)).rows[0]?.fingerprint;
    if (fingerprint !== pristine.fingerprint) return false;
    const tables = await tablesOf(client);
    await client.query('BEGIN');
    // No trigger fires while the tables are emptied and the pristine rows written back (an append-only ledger
    // refuses TRUNCATE; a trigger that stamps or chains rows would change the rows written back).
    await client.query('SET LOCAL session_replication_role = replica');
    await client.query(`TRUNCATE ${tables.map((table) => pg.escapeIdentifier(table)).join(', ')} RESTART IDENTITY CASCADE`);
    for (const [table, rows] of Object.entries(pristine.rows)) {
      const columns = await client.query<{ name: string }>(
        `SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
        [pg.escapeIdentifier(table)],
      );
      const list = columns.rows.map((column) => pg.escapeIdentifier(column.name)).join(', ');
      await client.query(
        `INSERT INTO ${pg.escapeIdentifier(table)} (${list}) OVERRIDING SYSTEM VALUE SELECT ${list} FROM json_populate_recordset(NULL::${pg.escapeIdentifier(table)}, $1::json)`,
        [JSON.stringify(rows)],
      );
    }
    for (const [name, state] of Object.entries(pristine.sequences)) {
      if (state.last_value === null) await client.query('SELECT setval($1::regclass, 1, false)', [pg.escapeIdentifier(name)]);
      else await client.query('SELECT setval($1::regclass, $2::bigint, $3)', [pg.escapeIdentifier(name), state.last_value, state.is_called]);
    }
    await client.query('COMMIT');
    return true;
  } finally {
    await client.end();
  }
}

async function tablesOf(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(`SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') ORDER BY relname`);
  return rows.map((row) => row.name);
}
