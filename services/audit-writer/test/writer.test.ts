import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { z } from 'zod';
import {
  AUDIT_QUEUE_KEY,
  createAuditProducer,
  readAuditAnchor,
  readAuditDrops,
  verifyAuditChain,
  type AuditEvent,
  type AuditProducer,
} from '@pcg/shared/audit';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { createAuditWriter, type AuditWriterDeps } from '../src/writer.ts';

const testEnv = useTestEnvironment();
const HOUR = 3_600_000;
/** Spec 8's log line of a failed flush, word for word; the count of rows dropped follows it. */
const FLUSH_FAILED = '[audit] flush failed, dropped batch:';

const event = (requestId: string, overrides: Partial<AuditEvent> = {}): AuditEvent => ({
  agentId: 'claude',
  tool: 'query',
  sector: 'finance',
  decision: 'allow',
  outcome: 'ok',
  args: { object: 'finance.account' },
  requestId,
  ...overrides,
});

const StoredSchema = z.object({
  id: z.number(),
  user_id: z.number(),
  agent_id: z.string().nullable(),
  tool: z.string(),
  sector: z.string().nullable(),
  decision: z.string(),
  deny_reason: z.string().nullable(),
  args: z.unknown(),
  result_count: z.number(),
  outcome: z.string(),
  request_id: z.string(),
  created_at: z.string(),
  tx: z.string(),
});

const stored = () =>
  testEnv.db.any(sql.type(StoredSchema)`SELECT audit_log.*, xmin::text AS tx FROM audit_log ORDER BY id`);

let producer: AuditProducer;

async function queue(count: number, prefix = 'r'): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, index) => `${prefix}-${index}`);
  for (const id of ids) producer.record(event(id));
  await producer.drain();
  return ids;
}

function writer(overrides: Partial<AuditWriterDeps> = {}) {
  const capture = createCapturingLogger('audit-writer');
  const instance = createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: capture.log, flushMs: HOUR, ...overrides });
  const messages = () => capture.lines().map((line) => (JSON.parse(line) as { msg: string }).msg);
  return { writer: instance, messages, lines: capture.lines };
}

beforeEach(async () => {
  await testEnv.redis.del(AUDIT_QUEUE_KEY);
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log, audit_drops, audit_producer_marks`);
  // An emptied table starts a new chain.
  await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash`);
  producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 10_000 }, log: createCapturingLogger().log });
});

describe('one flush', () => {
  it('writes the queued rows in one statement: one transaction, one created_at, ids in queue order', async () => {
    const ids = await queue(25);
    const { writer: w } = writer();
    expect(await w.flush()).toEqual({ taken: 25, written: 25, dropped: 0 });
    const rows = await stored();
    expect(rows.map((row) => row.request_id)).toEqual(ids);
    expect(new Set(rows.map((row) => row.created_at)).size).toBe(1);
    expect(new Set(rows.map((row) => row.tx)).size).toBe(1);
    expect(rows[0]).toMatchObject({ user_id: 1, agent_id: 'claude', tool: 'query', sector: 'finance', decision: 'allow', args: { object: 'finance.account' } });
    expect(rows[0]?.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(0);
  });

  it('gives each flush its own instant', async () => {
    const { writer: w } = writer();
    await queue(3, 'a');
    await w.flush();
    await queue(3, 'b');
    await w.flush();
    expect(new Set((await stored()).map((row) => row.created_at)).size).toBe(2);
  });

  it('takes at most one batch', async () => {
    await queue(10);
    const { writer: w } = writer({ batchSize: 4 });
    expect(await w.flush()).toEqual({ taken: 4, written: 4, dropped: 0 });
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(6);
  });

  it('stores what Postgres would otherwise refuse, so one row cannot sink a batch', async () => {
    producer.record(event('nul', { tool: 'query\u0000', args: { 'k\u0000': 'v\u0000', lone: '\udc00' }, denyReason: 'x\ud800' }));
    await queue(2);
    const { writer: w } = writer();
    expect(await w.flush()).toEqual({ taken: 3, written: 3, dropped: 0 });
    expect((await stored())[0]).toMatchObject({ tool: 'query\ufffd', deny_reason: 'x\ufffd', args: { 'k\ufffd': 'v\ufffd', lone: '\ufffd' } });
  });

  it('drops an unreadable queue entry alone and counts it', async () => {
    await queue(1, 'before');
    await testEnv.redis.rpush(AUDIT_QUEUE_KEY, 'not json', JSON.stringify({ tool: 'query' }));
    await queue(1, 'after');
    const { writer: w } = writer();
    expect(await w.flush()).toEqual({ taken: 4, written: 2, dropped: 2 });
    expect((await stored()).map((row) => row.request_id)).toEqual(['before-0', 'after-0']);
    expect((await readAuditDrops(testEnv.db)).unreadable).toBe(2);
  });
});

describe('a failed flush', () => {
  afterEach(async () => {
    await testEnv.db.query(sql.unsafe`ALTER TABLE IF EXISTS audit_log_away RENAME TO audit_log`);
  });

  it('drops the batch with the exact log line and its count, counts it for /api/status, never retries it, and the next flush works', async () => {
    await queue(7, 'lost');
    const { writer: w, messages, lines } = writer();
    await testEnv.db.query(sql.unsafe`ALTER TABLE audit_log RENAME TO audit_log_away`);
    expect(await w.flush()).toEqual({ taken: 7, written: 0, dropped: 7 });
    expect(messages()).toContain(`${FLUSH_FAILED} 7`);
    expect(lines().find((line) => line.includes(FLUSH_FAILED))).toContain('"dropped":7');
    expect(await readAuditDrops(testEnv.db)).toMatchObject({ queueOverflow: 0, flushFailed: 7, unreadable: 0 });
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(0);
    expect(w.stats()).toMatchObject({ dropped: 7, written: 0 });

    await testEnv.db.query(sql.unsafe`ALTER TABLE audit_log_away RENAME TO audit_log`);
    await queue(2, 'kept');
    expect(await w.flush()).toEqual({ taken: 2, written: 2, dropped: 0 });
    expect(await w.flush()).toEqual({ taken: 0, written: 0, dropped: 0 });
    expect((await stored()).map((row) => row.request_id)).toEqual(['kept-0', 'kept-1']);
  });

  it('leaves the running loop answering: later flushes write again', async () => {
    await queue(3, 'lost');
    const { writer: w, messages } = writer({ flushMs: 20 });
    await testEnv.db.query(sql.unsafe`ALTER TABLE audit_log RENAME TO audit_log_away`);
    w.start();
    try {
      await waitFor(() => (messages().includes(`${FLUSH_FAILED} 3`) ? true : undefined), 5_000, 'the failed flush');
      await testEnv.db.query(sql.unsafe`ALTER TABLE audit_log_away RENAME TO audit_log`);
      await queue(2, 'kept');
      await waitFor(async () => ((await stored()).length === 2 ? true : undefined), 5_000, 'the next flush');
      expect((await stored()).map((row) => row.request_id)).toEqual(['kept-0', 'kept-1']);
    } finally {
      await w.close();
    }
  });

  it('loses nothing when Redis cannot be reached: the rows stay queued', async () => {
    await queue(3);
    const { createRedis } = await import('@pcg/shared/redis');
    const away = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    away.on('error', () => {});
    try {
      const { writer: w, messages } = writer({ redis: away });
      expect(await w.flush()).toEqual({ taken: 0, written: 0, dropped: 0 });
      expect(messages()).toContain('[audit] queue unreachable, will try again');
      expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(3);
    } finally {
      away.disconnect();
    }
  });
});

describe('the flush loop', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('flushes every interval once started', async () => {
    const { writer: w } = writer({ flushMs: 20 });
    w.start();
    try {
      await queue(3, 'first');
      await waitFor(async () => ((await stored()).length === 3 ? true : undefined), 5_000, 'the first rows');
      await queue(2, 'second');
      await waitFor(async () => ((await stored()).length === 5 ? true : undefined), 5_000, 'the next rows');
    } finally {
      await w.close();
    }
  });

  it('catches up on a backlog without waiting an interval between full batches', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await queue(23);
    const { writer: w } = writer({ batchSize: 5 });
    w.start();
    // Only the first interval passes; every later flush must start by itself.
    await vi.advanceTimersByTimeAsync(HOUR);
    const deadline = Date.now() + 10_000;
    let written = 0;
    while (written < 23 && Date.now() < deadline) {
      await vi.advanceTimersByTimeAsync(0);
      await new Promise((resolve) => setImmediate(resolve));
      written = w.stats().written;
    }
    expect(written).toBe(23);
    await w.close();
  });
});

/**
 * The direct pool with each `connect()` held until the test lets it through, so a flush can be stopped
 * between taking its batch and writing it.
 */
function gatedConnections() {
  const gates: Array<() => void> = [];
  let waiting = 0;
  return {
    direct: {
      connect: async () => {
        waiting += 1;
        await new Promise<void>((resolve) => gates.push(resolve));
        return testEnv.direct.connect();
      },
    },
    /** Lets the oldest held connect through, once one is held. */
    async open(): Promise<void> {
      await waitFor(() => (gates.length > 0 ? true : undefined), 5_000, 'a flush to ask for a connection');
      gates.shift()?.();
    },
    waiting: () => waiting,
  };
}

describe('reading ahead in a backlog', () => {
  it('takes the next batch from Redis while a full one is written, and writes both in queue order on one chain', async () => {
    const ids = await queue(12);
    const gated = gatedConnections();
    const { writer: w } = writer({ batchSize: 5, flushMs: 1, direct: gated.direct });
    w.start();
    try {
      // The first batch is taken and waits for its connection; the second is taken meanwhile, the rest not.
      await waitFor(async () => ((await testEnv.redis.llen(AUDIT_QUEUE_KEY)) === 2 ? true : undefined), 5_000, 'the next batch to be read ahead');
      expect(gated.waiting()).toBe(1);
      expect(await stored()).toEqual([]);
      for (let flush = 0; flush < 3; flush += 1) await gated.open();
      await waitFor(async () => ((await stored()).length === 12 ? true : undefined), 5_000, 'every row');
    } finally {
      await w.close();
    }
    expect((await stored()).map((row) => row.request_id)).toEqual(ids);
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, headRows: 12, intactThrough: { row: 12 } });
  });

  it('writes a batch read ahead after the batch before it failed, instead of dropping it too', async () => {
    const ids = await queue(12);
    const gated = gatedConnections();
    const { writer: w, messages } = writer({ batchSize: 5, flushMs: 1, direct: gated.direct });
    w.start();
    try {
      await waitFor(async () => ((await testEnv.redis.llen(AUDIT_QUEUE_KEY)) === 2 ? true : undefined), 5_000, 'the next batch to be read ahead');
      await testEnv.db.query(sql.unsafe`ALTER TABLE audit_log RENAME TO audit_log_away`);
      await gated.open();
      await waitFor(() => (messages().includes(`${FLUSH_FAILED} 5`) ? true : undefined), 5_000, 'the first batch to fail');
      await testEnv.db.query(sql.unsafe`ALTER TABLE audit_log_away RENAME TO audit_log`);
      for (let flush = 0; flush < 2; flush += 1) await gated.open();
      await waitFor(async () => ((await stored()).length === 7 ? true : undefined), 5_000, 'the rows after the failed batch');
    } finally {
      await testEnv.db.query(sql.unsafe`ALTER TABLE IF EXISTS audit_log_away RENAME TO audit_log`);
      await w.close();
    }
    expect((await stored()).map((row) => row.request_id)).toEqual(ids.slice(5));
    expect(await readAuditDrops(testEnv.db)).toMatchObject({ flushFailed: 5 });
  });

  it('takes one batch at a time outside the loop: a single flush() reads nothing ahead', async () => {
    await queue(12);
    const { writer: w } = writer({ batchSize: 5 });
    expect(await w.flush()).toEqual({ taken: 5, written: 5, dropped: 0 });
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(7);
  });
});

describe('closing (SIGTERM)', () => {
  it('writes what is queued, a backlog of several batches included, before it resolves', async () => {
    await queue(12);
    const { writer: w } = writer({ batchSize: 5 });
    w.start();
    await w.close();
    expect((await stored()).map((row) => row.request_id)).toHaveLength(12);
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(0);
  });

  it('flushes when the real process gets SIGTERM, anchors the chain, then exits 0', async () => {
    await queue(40, 'sigterm');
    const root = path.resolve(import.meta.dirname, '..');
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-writer-'));
    onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
    const child = spawn(process.execPath, [path.join(root, 'src/main.ts')], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ...testEnv.env({ AUDIT_FLUSH_MS: String(HOUR), LOG_LEVEL: 'info', DATA_DIR: dataDir }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(() => (output.includes('audit-writer ready') ? true : undefined), 15_000, 'the writer to start');
    // One interval is an hour: nothing is written unless closing writes it.
    expect(await stored()).toEqual([]);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect((await stored()).map((row) => row.request_id)).toEqual(Array.from({ length: 40 }, (_, index) => `sigterm-${index}`));
    expect(await verifyAuditChain(testEnv.db, { anchor: await readAuditAnchor(dataDir) })).toMatchObject({ intact: true, anchor: { matched: true }, unanchoredRows: 0 });
  });
});
