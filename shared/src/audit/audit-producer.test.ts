import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createRedis } from '../redis/index.ts';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { createAuditProducer } from './audit-producer.ts';
import { sql } from '../db/index.ts';
import { readAuditDrops } from './audit-drops.ts';
import { AUDIT_QUEUE_KEY, auditProducerKey, pushAuditBatch, takeAuditBatch } from './audit-queue.ts';
import { QueuedAuditRowSchema, type AuditEvent } from './audit-types.ts';

const testEnv = useTestEnvironment();

const event = (overrides: Partial<AuditEvent> = {}): AuditEvent => ({
  agentId: 'claude',
  tool: 'query',
  sector: 'finance',
  decision: 'allow',
  outcome: 'ok',
  args: { object: 'finance.transaction', apiKey: 'sk-123' },
  ...overrides,
});

const messages = (lines: string[]) => lines.map((line) => (JSON.parse(line) as { msg: string }).msg);

beforeEach(async () => {
  await testEnv.redis.del(AUDIT_QUEUE_KEY);
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_drops`);
});

describe('the audit producer', () => {
  it('queues the built, redacted row without the caller waiting for Redis', async () => {
    const producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 10 }, log: createCapturingLogger().log });
    const args = { object: 'finance.transaction', apiKey: 'sk-123' };
    expect(producer.record(event({ args, requestId: 'r-1' }))).toBeUndefined();
    // The row was built when recorded: changing the caller's object afterwards changes nothing.
    args.object = 'changed';
    await producer.drain();
    const [entry] = await takeAuditBatch(testEnv.redis, 10);
    expect(JSON.parse(entry ?? 'null')).toMatchObject({ producer: expect.any(String), seq: 1 });
    expect(QueuedAuditRowSchema.parse(JSON.parse(entry ?? 'null'))).toEqual({
      userId: 1, agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', denyReason: null,
      // Keys in the audit chain's canonical order (shorter first, then bytewise), as jsonb keeps them anyway.
      argsJson: '{"apiKey":"[redacted]","object":"finance.transaction"}', resultCount: 0, outcome: 'ok', requestId: 'r-1',
    });
    expect(producer.stats()).toEqual({ queued: 1, overflow: 0, failed: 0, invalid: 0, buffered: 0 });
  });

  it('keeps the order rows were recorded in, numbered 1, 2, 3… as Redis takes them', async () => {
    const producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 100 }, log: createCapturingLogger().log });
    for (let index = 0; index < 20; index += 1) producer.record(event({ requestId: `r-${index}` }));
    await producer.drain();
    const entries = await takeAuditBatch(testEnv.redis, 100);
    expect(entries.map((entry) => (JSON.parse(entry) as { requestId: string }).requestId)).toEqual(
      Array.from({ length: 20 }, (_, index) => `r-${index}`),
    );
    expect(entries.map((entry) => (JSON.parse(entry) as { seq: number }).seq)).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
  });

  it('drops past capacity with the exact log line, counts the drop in Postgres, and takes rows again once there is room', async () => {
    const { log, lines } = createCapturingLogger();
    const producer = createAuditProducer({ redis: testEnv.redis, db: testEnv.db, source: 'console', settings: { AUDIT_QUEUE_CAPACITY: 3 }, log });
    const results = [];
    for (let index = 0; index < 5; index += 1) results.push(await producer.enqueue(event({ requestId: `r-${index}` })));
    expect(results).toEqual(['queued', 'queued', 'queued', 'overflow', 'overflow']);
    expect(messages(lines()).filter((msg) => msg === '[audit] queue overflow — dropped')).toHaveLength(2);
    await producer.drain();
    expect(await readAuditDrops(testEnv.db)).toMatchObject({ queueOverflow: 2, flushFailed: 0, unreadable: 0 });
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(3);
    expect(producer.stats()).toMatchObject({ queued: 3, overflow: 2 });

    await takeAuditBatch(testEnv.redis, 1);
    expect(await producer.enqueue(event())).toBe('queued');
  });

  it('never lets producers on separate connections push past capacity together', async () => {
    const clients = [0, 1, 2].map(() => createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'commands'));
    try {
      const producers = clients.map((redis) =>
        createAuditProducer({ redis, db: testEnv.db, settings: { AUDIT_QUEUE_CAPACITY: 50 }, log: createCapturingLogger().log }),
      );
      await Promise.all(producers.flatMap((producer) => Array.from({ length: 100 }, () => producer.enqueue(event()))));
      await Promise.all(producers.map((producer) => producer.drain()));
      expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(50);
      expect((await readAuditDrops(testEnv.db)).queueOverflow).toBe(250);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('never throws when Redis is away: the row is held, then dropped and counted when the producer stops with Redis still away', async () => {
    const { log, lines } = createCapturingLogger();
    const away = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    away.on('error', () => {});
    try {
      const producer = createAuditProducer({ redis: away, db: testEnv.db, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 10 }, log });
      expect(() => producer.record(event())).not.toThrow();
      await waitFor(() => (messages(lines()).includes('[audit] Redis unreachable; holding rows until it returns') ? true : undefined));
      expect(producer.stats()).toMatchObject({ queued: 0, failed: 0, buffered: 1 });
      await producer.drain({ timeoutMs: 100 });
      expect(producer.stats()).toMatchObject({ queued: 0, failed: 1, buffered: 0 });
      expect(await readAuditDrops(testEnv.db)).toMatchObject({ gaveUp: 1 });
    } finally {
      away.disconnect();
    }
  });

  it('drops new rows past its buffer while Redis is away, counting each, with one log line rather than one a row', async () => {
    const { log, lines } = createCapturingLogger();
    const away = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    away.on('error', () => {});
    try {
      const producer = createAuditProducer({ redis: away, db: testEnv.db, settings: { AUDIT_QUEUE_CAPACITY: 10, AUDIT_BUFFER_CAPACITY: 3 }, log });
      for (let index = 0; index < 3; index += 1) producer.record(event());
      expect(await Promise.all([producer.enqueue(event()), producer.enqueue(event())])).toEqual(['failed', 'failed']);
      expect(messages(lines()).filter((msg) => msg.startsWith('[audit] buffer full'))).toEqual(['[audit] buffer full while Redis is away — dropping new rows']);
      await producer.drain({ timeoutMs: 0 });
      expect(await readAuditDrops(testEnv.db)).toMatchObject({ bufferOverflow: 2, gaveUp: 3 });
    } finally {
      away.disconnect();
    }
  });

  it('queues every row of a burst of 100,000 recorded while Redis answers, past its 50,000-row buffer: Redis acknowledges all, none is dropped (issue 44)', async () => {
    const { log, lines } = createCapturingLogger();
    const producer = createAuditProducer({ redis: testEnv.redis, db: testEnv.db, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 100_000, AUDIT_BUFFER_CAPACITY: 50_000 }, log });
    for (let index = 0; index < 100_000; index += 1) producer.record(event({ requestId: `burst-${index}` }));
    await producer.drain({ timeoutMs: 120_000 });
    expect(producer.stats()).toEqual({ queued: 100_000, overflow: 0, failed: 0, invalid: 0, buffered: 0 });
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(100_000);
    const last = await testEnv.redis.lindex(AUDIT_QUEUE_KEY, -1);
    expect(JSON.parse(last ?? 'null')).toMatchObject({ requestId: 'burst-99999', seq: 100_000 });
    expect(Object.values(await readAuditDrops(testEnv.db)).every((rows) => rows === 0)).toBe(true);
    expect(messages(lines()).filter((msg) => msg.includes('dropp'))).toEqual([]);
  });

  it('queues every row of a burst of 100,000 recorded while Redis answers with its spool too (design 8.4): none dropped, every row kept until written', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-burst-spool-'));
    try {
      const { log } = createCapturingLogger();
      const producer = createAuditProducer({ redis: testEnv.redis, db: testEnv.db, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 100_000, AUDIT_BUFFER_CAPACITY: 50_000 }, log, spoolDir: dataDir });
      for (let index = 0; index < 100_000; index += 1) producer.record(event({ requestId: `spooled-burst-${index}` }));
      await producer.drain({ timeoutMs: 120_000 });
      expect(producer.stats()).toEqual({ queued: 100_000, overflow: 0, failed: 0, invalid: 0, buffered: 0 });
      expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(100_000);
      expect(Object.values(await readAuditDrops(testEnv.db)).every((rows) => rows === 0)).toBe(true);
      // Nothing was written yet, so the spool still holds every row for a resend.
      const spooled = (await readFile(path.join(dataDir, 'audit-spool', 'gateway.jsonl'), 'utf8')).split('\n').filter((line) => line.includes('spooled-burst-'));
      expect(spooled).toHaveLength(100_000);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('never throws for an event that breaks the contract: it is logged and dropped', async () => {
    const { log, lines } = createCapturingLogger();
    const producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 10 }, log });
    expect(() => producer.record(event({ tool: '' }))).not.toThrow();
    expect(await producer.enqueue(event({ outcome: 'maybe' as 'ok' }))).toBe('invalid');
    expect(producer.stats()).toMatchObject({ queued: 0, invalid: 2 });
    expect(messages(lines()).filter((msg) => msg === '[audit] event rejected — dropped')).toHaveLength(2);
    expect(await testEnv.redis.llen(AUDIT_QUEUE_KEY)).toBe(0);
  });
});

describe('pushAuditBatch', () => {
  const row = (name: string) => JSON.stringify({ requestId: name });
  const queued = async () => (await takeAuditBatch(testEnv.redis, 100)).map((entry) => JSON.parse(entry) as { requestId: string; producer: string; seq: number });

  it('numbers each row it queues, skips the rows an earlier send of the batch queued, and refuses past capacity', async () => {
    const producerId = 'p-resend';
    await testEnv.redis.del(auditProducerKey(producerId));
    expect(await pushAuditBatch(testEnv.redis, { producerId, firstSeq: 1, rows: ['a', 'b', 'c'].map(row), capacity: 6 })).toEqual({ already: 0, queued: 3, refused: 0 });
    // The answer was lost: the batch goes again, grown by two rows, from the same first number.
    expect(await pushAuditBatch(testEnv.redis, { producerId, firstSeq: 1, rows: ['a', 'b', 'c', 'd', 'e'].map(row), capacity: 6 })).toEqual({ already: 3, queued: 2, refused: 0 });
    expect(await pushAuditBatch(testEnv.redis, { producerId, firstSeq: 6, rows: ['f', 'g'].map(row), capacity: 6 })).toEqual({ already: 0, queued: 1, refused: 1 });
    expect(await queued()).toEqual(['a', 'b', 'c', 'd', 'e', 'f'].map((name, index) => ({ requestId: name, producer: producerId, seq: index + 1 })));
  });
});
