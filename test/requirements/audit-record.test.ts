import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAuditProducer, insertAuditRows, QueuedAuditRowSchema, takeAuditBatch, type AuditEvent } from '@pcg/shared/audit';
import { upsertRecords } from '@pcg/shared/cache';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { collectQueuedAuditRows, createCapturingLogger, createTestAgent, insertTestConnection, takeQueuedAuditRows, useTestEnvironment } from '@pcg/testkit/testing';
import { auditWriterConfigSchema } from '../../services/audit-writer/src/config.ts';
import { buildApp } from '../../services/console/src/app.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';

// Spec 2.3, 4.5, 6 and 8: the audit record as the Console serves it and as the code keeps it.
const testEnv = useTestEnvironment();
const root = path.resolve(import.meta.dirname, '../..');
let app: FastifyInstance;
let key: string;

const auditCount = () => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log`);

beforeAll(async () => {
  app = buildApp({ config: loadConfig(consoleConfigSchema, testEnv.env()), log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis });
  await app.ready();
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId: bank, source: 'plaid', records: [{ source_id: 't1', amount: '-1.00', pending: false }] });
  key = await createTestAgent(testEnv.db, { name: 'mirror-reader', sectors: ['finance', 'home'] });
  // Rows of both outcomes, written as the audit-writer writes them.
  const producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 100 }, log: createCapturingLogger().log });
  const rows: AuditEvent[] = [
    { agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', requestId: 'ok-1' },
    { agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'error', requestId: 'error-1' },
    { agentId: 'claude', tool: 'query', sector: 'mail', decision: 'deny', denyReason: 'sector not granted', outcome: 'error', requestId: 'error-2' },
  ];
  for (const row of rows) producer.record(row);
  await producer.drain();
  await insertAuditRows(testEnv.db, (await takeAuditBatch(testEnv.redis, 100)).map((entry) => QueuedAuditRowSchema.parse(JSON.parse(entry))));
});
afterAll(async () => app.close());
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

const requestIds = async (query: string) => {
  const response = await app.inject({ method: 'GET', url: `/api/audit${query}` });
  expect(response.statusCode).toBe(200);
  return (response.json() as Array<{ request_id: string }>).map((row) => row.request_id);
};

describe('GET /api/audit', () => {
  it('has no filter on outcome: an outcome parameter narrows nothing', async () => {
    const all = await requestIds('');
    expect(all).toEqual(['error-2', 'error-1', 'ok-1']);
    expect(await requestIds('?outcome=ok')).toEqual(all);
    expect(await requestIds('?outcome=error')).toEqual(all);
  });

  it('leaves no row for reading the record', async () => {
    const before = await auditCount();
    await requestIds('?limit=2');
    await requestIds('?agent=claude&decision=deny');
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
    expect(await auditCount()).toBe(before);
  });
});

describe('the read mirror', () => {
  it('records each of the five reads under its tool name, with the sector it touched', async () => {
    const bearer = { authorization: `Bearer ${key}` };
    const [row] = ((await app.inject({ method: 'POST', url: '/api/query', headers: bearer, payload: { object: 'finance.transaction' } })).json() as { rows: Array<{ id: string }> }).rows;
    await takeQueuedAuditRows(testEnv.redis);
    await app.inject({ method: 'GET', url: '/api/context', headers: bearer });
    await app.inject({ method: 'GET', url: '/api/schema?sector=finance', headers: bearer });
    await app.inject({ method: 'POST', url: '/api/query', headers: bearer, payload: { object: 'finance.transaction' } });
    await app.inject({ method: 'GET', url: `/api/records/finance/${row?.id}`, headers: bearer });
    await app.inject({ method: 'POST', url: '/api/fetch_live', headers: bearer, payload: { object: 'home.entity' } });
    const rows = await collectQueuedAuditRows(testEnv.redis, 5);
    expect(rows.map((entry) => [entry.agentId, entry.tool, entry.decision, entry.outcome])).toEqual([
      ['mirror-reader', 'describe_context', 'allow', 'ok'],
      ['mirror-reader', 'get_schema', 'allow', 'ok'],
      ['mirror-reader', 'query', 'allow', 'ok'],
      ['mirror-reader', 'get_record', 'allow', 'ok'],
      ['mirror-reader', 'fetch_live', 'allow', 'error'],
    ]);
    expect(rows.map((entry) => entry.sector)).toEqual([null, 'finance', 'finance', 'finance', 'home']);
  });
});

/** Every source file the services, shared code and scripts run, tests and test doubles left out. */
async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && /\.(ts|sql)$/.test(entry.name) && !entry.name.endsWith('.test.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name))
    // The benchmarks create, empty and drop databases of their own; they never touch the operator's.
    .filter((file) => !/[/\\](test|testing|doubles|bench)[/\\]/.test(file));
}

describe('the record is append-only in practice', () => {
  it('has no code that deletes, truncates or rewrites audit rows, and no retention job', async () => {
    const files = [...(await sourceFiles(path.join(root, 'services'))), ...(await sourceFiles(path.join(root, 'shared/src'))), ...(await sourceFiles(path.join(root, 'scripts')))];
    expect(files.length).toBeGreaterThan(50);
    const writes = /\b(DELETE\s+FROM|TRUNCATE(\s+TABLE)?|UPDATE|DROP\s+TABLE)\s+(IF\s+EXISTS\s+)?(ONLY\s+)?"?audit_log\b/i;
    // The one ALTER allowed adds columns (the hash chain's), which rewrites no row.
    const alters = /\bALTER\s+TABLE\s+(IF\s+EXISTS\s+)?(ONLY\s+)?"?audit_log\b"?([^;]*)/gi;
    const onlyAddsColumns = (clauses: string) => clauses.split(',').every((clause) => /^\s*ADD\s+COLUMN\s+\w+\s+\w+\s*$/i.test(clause));
    const offenders: string[] = [];
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      // The migration's Down section drops what its Up section created; it is never run by the service.
      const live = file.endsWith('.sql') ? text.split(/--\s*Down Migration/i)[0] ?? '' : text;
      if (writes.test(live) || [...live.matchAll(alters)].some((match) => !onlyAddsColumns(match[3] ?? ''))) offenders.push(path.relative(root, file));
    }
    expect(offenders).toEqual([]);
    // The only statement that touches the table's rows is the writer's chained INSERT.
    const inserts = [];
    for (const file of files) if (/INSERT\s+INTO\s+audit_log\b/i.test(await readFile(file, 'utf8'))) inserts.push(path.relative(root, file));
    expect(inserts).toEqual(['shared/src/audit/audit-chain-queries.ts']);
  });
});

describe('the audit-writer', () => {
  it('flushes every 1000 ms unless AUDIT_FLUSH_MS says otherwise', () => {
    expect(loadConfig(auditWriterConfigSchema, {}).AUDIT_FLUSH_MS).toBe(1000);
    expect(loadConfig(auditWriterConfigSchema, { AUDIT_FLUSH_MS: '250' }).AUDIT_FLUSH_MS).toBe(250);
  });
});
