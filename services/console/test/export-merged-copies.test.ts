import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { seedDemo } from '../../../scripts/demo/seed.ts';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { collectingAudit } from './helpers.ts';

/**
 * Issue 34: an export leaves out merged copies (spec 2.1: an account two connections deliver is read
 * once) as agents' reads do, and says so in a response header and in the Console; includeMergedCopies
 * exports them too. The bodies stay plain data. The demo seed merges one pair of accounts.
 */
const testEnv = useTestEnvironment();
const audit = collectingAudit();
const HOST = { host: '127.0.0.1:8787', 'content-type': 'application/json' };
let app: FastifyInstance;
/** Merged-away accounts and their holdings, by the database's own list (spec 2.1), and transactions merged one by one. */
let mergedRows: number;
let allRows: number;

const count = (query: ReturnType<typeof sql.unsafe>) => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT (${query})::int AS n`);

beforeAll(async () => {
  await seedDemo(testEnv.db, Date.parse('2026-11-18T15:00:00.000Z'));
  app = buildApp({ config: loadConfig(consoleConfigSchema, testEnv.env({})), log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, audit: audit.recorder });
  await app.ready();
  const merged = sql.unsafe`finance_merged_account_ids()`;
  mergedRows =
    (await count(sql.unsafe`SELECT count(*) FROM finance_accounts WHERE id = ANY(${merged})`)) +
    // Transactions are merged one by one (design 8.3): only the later copy's rows matched to the earlier's.
    (await count(sql.unsafe`SELECT count(*) FROM finance_transactions WHERE merged_into IS NOT NULL`)) +
    (await count(sql.unsafe`SELECT count(*) FROM finance_holdings WHERE account_id = ANY(${merged})`));
  allRows =
    (await count(sql.unsafe`SELECT count(*) FROM finance_accounts`)) +
    (await count(sql.unsafe`SELECT count(*) FROM finance_transactions`)) +
    (await count(sql.unsafe`SELECT count(*) FROM finance_holdings`));
}, 60_000);
afterAll(async () => app?.close());

const exportFinance = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/export/finance', headers: HOST, payload });

describe('export and merged copies', () => {
  it('leaves merged copies out and says so in a header, the body plain data', async () => {
    expect(mergedRows).toBeGreaterThan(0);
    audit.events.length = 0;
    const answer = await exportFinance({ format: 'jsonl' });
    expect(answer.statusCode).toBe(200);
    const records = answer.body.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toHaveLength(allRows - mergedRows);
    expect(records.every((record) => typeof record.object === 'string' && typeof record.id === 'string')).toBe(true);
    expect(answer.headers['x-export-count']).toBe(String(allRows - mergedRows));
    expect(answer.headers['x-export-merged-copies']).toBe(`${mergedRows} left out`);
    expect(answer.headers['x-export-merged-copies-note']).toBe(
      `${mergedRows} merged copies were left out: rows of an account another connection also delivers, kept once as agents read them. Export again with includeMergedCopies to have them.`,
    );
    expect(audit.events).toEqual([expect.objectContaining({ tool: 'export', sector: 'finance', outcome: 'ok', resultCount: allRows - mergedRows, args: { sector: 'finance', format: 'jsonl' } })]);
  });

  it('exports them with includeMergedCopies, and the header says they are in', async () => {
    audit.events.length = 0;
    const answer = await exportFinance({ format: 'csv', includeMergedCopies: true });
    expect(answer.statusCode).toBe(200);
    expect(answer.body.trimEnd().split('\r\n').length - 1).toBe(allRows);
    expect(answer.headers['x-export-merged-copies']).toBe(`${mergedRows} included`);
    expect(answer.headers['x-export-merged-copies-note']).toBeUndefined();
    expect(audit.events).toEqual([expect.objectContaining({ tool: 'export', resultCount: allRows, args: { sector: 'finance', format: 'csv', includeMergedCopies: true } })]);
  });

  it('a sector with no merged copies says none were left out, and a non-boolean option is refused', async () => {
    const answer = await app.inject({ method: 'POST', url: '/api/export/home', headers: HOST, payload: { format: 'jsonl' } });
    expect(answer.headers['x-export-merged-copies']).toBe('0 left out');
    expect(answer.headers['x-export-merged-copies-note']).toBeUndefined();
    expect((await exportFinance({ format: 'jsonl', includeMergedCopies: 'yes' })).statusCode).toBe(400);
  });
});
