import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { runMigrations } from './migrate.ts';

const testEnv = useTestEnvironment();

const CACHE_TABLES = [
  'finance_accounts',
  'finance_transactions',
  'finance_holdings',
  'health_samples',
  'health_workouts',
  'health_sleep_sessions',
  'mail_messages',
  'contacts_entries',
  'calendar_events',
  'home_entities',
];

const columnsOf = async (table: string) =>
  testEnv.db.manyFirst(sql.type(z.object({ column_name: z.string() }))`
    SELECT column_name FROM information_schema.columns
    WHERE table_schema = 'public' AND table_name = ${table}
    ORDER BY ordinal_position`);

describe('the first schema', () => {
  it('seeds the single operator user', async () => {
    const users = await testEnv.db.many(sql.type(z.object({ id: z.number(), name: z.string() }))`SELECT id, name FROM users`);
    expect(users).toEqual([{ id: 1, name: 'operator' }]);
  });

  it('gives audit_log exactly one index, on (user_id, created_at DESC) (spec 2.3)', async () => {
    const indexes = await testEnv.db.manyFirst(sql.type(z.object({ indexdef: z.string() }))`
      SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'audit_log'`);
    expect(indexes).toHaveLength(1);
    expect(indexes[0]).toMatch(/\(user_id, created_at DESC\)$/);
  });

  it('has the audit row columns of spec 2.3, then the hash chain\'s place and hash (never served)', async () => {
    expect(await columnsOf('audit_log')).toEqual([
      'id', 'user_id', 'agent_id', 'tool', 'sector', 'decision', 'deny_reason',
      'args', 'result_count', 'outcome', 'request_id', 'created_at', 'chain_seq', 'row_hash',
    ]);
  });

  it('stores a grant with the fields of spec 2.2 and no key column', async () => {
    const columns = await columnsOf('agents');
    expect(columns).toEqual(expect.arrayContaining(['user_id', 'name', 'key_hash', 'sectors', 'created_at', 'revoked_at', 'expires_at']));
    expect(columns.filter((name) => name === 'key' || name === 'api_key')).toEqual([]);
  });

  it.each(CACHE_TABLES)('gives %s the common cache columns and an idempotency key', async (table) => {
    const columns = await columnsOf(table);
    expect(columns.slice(0, 5)).toEqual(['id', 'connection_id', 'source', 'source_id', 'synced_at']);
    const unique = await testEnv.db.manyFirst(sql.type(z.object({ def: z.string() }))`
      SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
      JOIN pg_class t ON t.oid = c.conrelid
      WHERE t.relname = ${table} AND c.contype = 'u'`);
    expect(unique).toContain('UNIQUE (connection_id, source_id)');
  });

  it('caches mail envelopes only: no body, snippet or attachment column', async () => {
    const columns = await columnsOf('mail_messages');
    expect(columns.filter((name) => /body|snippet|attachment_data|content/.test(name))).toEqual([]);
  });

  it('applies nothing a second time', async () => {
    expect(await runMigrations(testEnv.databaseUrl)).toEqual([]);
  });
});

describe('the pool', () => {
  it('returns int8 as a number, numeric as an exact string and timestamps as ISO with milliseconds', async () => {
    const row = await testEnv.db.one(sql.type(z.object({ n: z.number(), money: z.string(), at: z.string(), day: z.string() }))`
      SELECT 9007199254740991::int8 AS n, '-12.3400'::numeric AS money,
             '2026-03-01 10:20:30.456789+02'::timestamptz AS at, '2026-03-01'::date AS day`);
    expect(row).toEqual({ n: 9007199254740991, money: '-12.3400', at: '2026-03-01T08:20:30.456Z', day: '2026-03-01' });
  });

  it('fails loudly when a row does not match the type it was queried with', async () => {
    await expect(testEnv.db.one(sql.type(z.object({ n: z.string() }))`SELECT 1::int AS n`)).rejects.toThrow(/schema/i);
  });
});
