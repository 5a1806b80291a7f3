import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUDIT_QUEUE_KEY, auditProducerKey, createAuditProducer, readAuditDrops, type AuditDropCounts } from '@pcg/shared/audit';
import { sql } from '@pcg/shared/db';
import { createRedis } from '@pcg/shared/redis';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { z } from 'zod';
import { loadSequenceMarks } from '../src/sequence-marks.ts';
import { createAuditWriter } from '../src/writer.ts';

/**
 * Design 8.4: a producer keeps every row in a spool in DATA_DIR until the writer has stored it, so a crash of
 * the producer, or a Redis that loses what it held, loses no row; the writer skips a row sent twice.
 */
const testEnv = useTestEnvironment();
const HOUR = 3_600_000;
const CHILD = fileURLToPath(new URL('./fixtures/spooling-producer.ts', import.meta.url));
let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-spool-'));
  await testEnv.redis.del(AUDIT_QUEUE_KEY);
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log, audit_drops, audit_producer_marks`);
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const requestIds = async () =>
  (await testEnv.db.any(sql.type(z.object({ request_id: z.string() }))`SELECT request_id FROM audit_log ORDER BY request_id`)).map((row) => row.request_id);
const totalDrops = (drops: AuditDropCounts) => Object.values(drops).reduce((sum, rows) => sum + rows, 0);
const ids = (prefix: string, rows: number) => Array.from({ length: rows }, (_, index) => `${prefix}-${index + 1}`).sort();

/** Runs a producing process of `dataDir` that records `rows` rows, then kills it with SIGKILL. */
async function crashedProducer(rows: number, options: { redisAway?: boolean } = {}): Promise<void> {
  const child = spawn(process.execPath, [CHILD], {
    env: {
      ...process.env,
      REDIS_URL: options.redisAway ? 'redis://127.0.0.1:1' : testEnv.redisUrl,
      REDIS_PREFIX: testEnv.redisPrefix,
      DATABASE_URL: testEnv.databaseUrl,
      DATA_DIR: dataDir,
      ROWS: String(rows),
      ROW_PREFIX: 'crashed',
      ...(options.redisAway ? { REDIS_AWAY: '1' } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitFor(() => (output.includes('recorded') ? true : undefined), 20_000, 'the producing process to record its rows');
  child.kill('SIGKILL');
  await exited;
}

/** What a Redis restart does to the audit keys: the queue and the producers' numbers are gone. */
async function redisLosesItsData(): Promise<void> {
  const producerKeys = (await testEnv.redis.keys(`${testEnv.redisPrefix}${auditProducerKey('*')}`)).map((key) => key.slice(testEnv.redisPrefix.length));
  await testEnv.redis.del(AUDIT_QUEUE_KEY, ...producerKeys);
}

function writerAndProducer() {
  const { log } = createCapturingLogger();
  const producer = createAuditProducer({ redis: testEnv.redis, db: testEnv.db, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 100_000 }, log, spoolDir: dataDir });
  return { producer };
}

async function writer() {
  return createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR, marks: await loadSequenceMarks(testEnv.db) });
}

describe('the audit spool (design 8.4)', () => {
  it('rows a producer held while Redis was away, when it was killed, are sent at the next start of a producer of the same data folder and written once', async () => {
    await crashedProducer(40, { redisAway: true });
    const { producer } = writerAndProducer();
    const flushing = await writer();
    await waitFor(async () => ((await flushing.flush(), (await requestIds()).length >= 40) ? true : undefined), 10_000, 'the spooled rows written');
    await producer.drain();
    await flushing.flush();
    expect(await requestIds()).toEqual(ids('crashed', 40));
    expect(totalDrops(await readAuditDrops(testEnv.db))).toBe(0);
  });

  it('rows Redis took from a killed producer and then lost with its data are sent again at the next start; a row sent again after it was written is written once', async () => {
    await crashedProducer(30);
    // The writer stores half of them; then Redis loses its data, the other half with it.
    const first = await createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR, batchSize: 15 }).flush();
    expect(first.written).toBe(15);
    const flushing = await writer();
    await redisLosesItsData();

    const { producer } = writerAndProducer();
    for (let index = 1; index <= 5; index += 1) producer.record({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', requestId: `later-${index}` });
    await waitFor(async () => ((await flushing.flush(), (await requestIds()).length >= 35) ? true : undefined), 10_000, 'every row written');
    await producer.drain();
    await flushing.flush();
    expect(await requestIds()).toEqual([...ids('crashed', 30), ...ids('later', 5)].sort());
    expect(totalDrops(await readAuditDrops(testEnv.db))).toBe(0);
  });

  it('a producer that stays idle after Redis lost rows it had taken sends them again, and they are written', async () => {
    const { producer } = writerAndProducer();
    for (let index = 1; index <= 20; index += 1) producer.record({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', requestId: `idle-${index}` });
    await waitFor(() => (producer.stats().queued === 20 ? true : undefined), 10_000, 'the rows in Redis');
    await redisLosesItsData();
    const flushing = await writer();
    await waitFor(async () => ((await flushing.flush(), (await requestIds()).length >= 20) ? true : undefined), 10_000, 'the rows written');
    await producer.drain();
    expect(await requestIds()).toEqual(ids('idle', 20));
    expect(totalDrops(await readAuditDrops(testEnv.db))).toBe(0);
  });

  it('a loss counted while Postgres was away is stored by the next producer of the data folder when the one that counted it stopped first', async () => {
    const away = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    away.on('error', () => {});
    const postgresAway = { query: () => Promise.reject(new Error('connect ECONNREFUSED')) } as unknown as typeof testEnv.db;
    try {
      const first = createAuditProducer({ redis: away, db: postgresAway, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 100, AUDIT_BUFFER_CAPACITY: 2 }, log: createCapturingLogger().log, spoolDir: dataDir });
      const results = [1, 2, 3].map((index) => first.enqueue({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', requestId: `full-${index}` }));
      // It stops with Redis and Postgres away: the rows stay in the spool, the count beside it.
      await first.drain({ timeoutMs: 100 });
      expect(await Promise.all(results)).toEqual(['spooled', 'spooled', 'failed']);
    } finally {
      away.disconnect();
    }
    expect(await readAuditDrops(testEnv.db)).toMatchObject({ bufferOverflow: 0 });
    const { producer } = writerAndProducer();
    const flushing = await writer();
    await waitFor(async () => ((await flushing.flush(), (await requestIds()).length >= 2) ? true : undefined), 10_000, 'the two spooled rows written');
    await producer.drain();
    expect(await requestIds()).toEqual(ids('full', 2));
    expect(await readAuditDrops(testEnv.db)).toMatchObject({ bufferOverflow: 1 });
    expect(totalDrops(await readAuditDrops(testEnv.db))).toBe(1);
  });

  it('rows the full queue refused are counted once, as queue_overflow and not again as lost with Redis, and not sent again by the next producer', async () => {
    const { log } = createCapturingLogger();
    const producer = createAuditProducer({ redis: testEnv.redis, db: testEnv.db, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 3 }, log, spoolDir: dataDir });
    const results = await Promise.all(Array.from({ length: 5 }, (_, index) => producer.enqueue({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', requestId: `cap-${index + 1}` })));
    expect(results).toEqual(['queued', 'queued', 'queued', 'overflow', 'overflow']);
    await producer.drain();
    const next = writerAndProducer().producer;
    const flushing = await writer();
    await waitFor(async () => ((await flushing.flush(), (await requestIds()).length >= 3) ? true : undefined), 10_000, 'the queued rows written');
    // The next row's number is 6: the writer must not count 4 and 5 as lost with Redis, they were refused.
    expect(await next.enqueue({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', requestId: 'cap-6' })).toBe('queued');
    await next.drain();
    await flushing.flush();
    expect(await requestIds()).toEqual([...ids('cap', 3), 'cap-6']);
    expect(await readAuditDrops(testEnv.db)).toMatchObject({ queueOverflow: 2, lostWithRedis: 0 });
  });
});
