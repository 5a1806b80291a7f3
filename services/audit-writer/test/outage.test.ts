import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuditProducer, readAuditDrops, readAuditQueueDepth, type AuditDropCounts } from '@pcg/shared/audit';
import { createDatabase, sql, type Database, type DatabasePool } from '@pcg/shared/db';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { z } from 'zod';
import { startOwnPostgres, startOwnRedis, type OwnPostgres, type OwnRedis } from '../../../test/support/own-stores.ts';
import { loadSequenceMarks } from '../src/sequence-marks.ts';
import { createAuditWriter } from '../src/writer.ts';

// Stores of this file's own, stopped and started again: never the run's shared ones.
const testEnv = useTestEnvironment();
const HOUR = 3_600_000;
const clients: Redis[] = [];
const commands = (url: string, prefix: string) => {
  const client = createRedis({ REDIS_URL: url, REDIS_PREFIX: prefix }, 'commands');
  client.on('error', () => {});
  clients.push(client);
  return client;
};
const written = (db: DatabasePool) => db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log`);
const total = (drops: AuditDropCounts) => Object.values(drops).reduce((sum, rows) => sum + rows, 0);
const event = (index: number) => ({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow' as const, outcome: 'ok' as const, requestId: `r-${index}` });

afterAll(async () => {
  for (const client of clients) client.disconnect();
});

describe('audit rows across a Redis outage', () => {
  let redis: OwnRedis;
  beforeAll(async () => {
    redis = await startOwnRedis();
  });
  afterAll(async () => redis?.dispose());

  it('writes or counts every row produced: held rows go out when Redis returns, and rows lost with its data are counted', async () => {
    const producerLog = createCapturingLogger('gateway');
    const writerLog = createCapturingLogger('audit-writer');
    const producer = createAuditProducer({
      redis: commands(redis.url, testEnv.redisPrefix),
      db: testEnv.db,
      source: 'gateway',
      settings: { AUDIT_QUEUE_CAPACITY: 100_000, AUDIT_BUFFER_CAPACITY: 500 },
      log: producerLog.log,
    });
    const writer = createAuditWriter({
      db: testEnv.db,
      direct: testEnv.direct,
      redis: commands(redis.url, testEnv.redisPrefix),
      log: writerLog.log,
      flushMs: HOUR,
      marks: await loadSequenceMarks(testEnv.db),
    });
    let produced = 0;
    const produce = (rows: number) => {
      for (let index = 0; index < rows; index += 1) producer.record(event((produced += 1)));
    };

    produce(300);
    await producer.drain();
    await writer.flush();
    produce(200);
    await producer.drain();
    // 200 rows wait in Redis when it stops, and go with it (it keeps nothing on disk).
    await redis.stop();
    produce(800); // 500 held in the buffer, 300 past it
    await writer.flush(); // finds Redis away: takes nothing
    await redis.start();
    await waitFor(() => (producer.stats().buffered === 0 ? true : undefined), 20_000, 'the held rows to go out');
    produce(100);
    await producer.drain();
    while ((await writer.flush()).taken > 0);

    const drops = await readAuditDrops(testEnv.db);
    expect(drops).toMatchObject({ lostWithRedis: 200, bufferOverflow: 300 });
    expect(await written(testEnv.db)).toBe(300 + 500 + 100);
    expect(await written(testEnv.db) + total(drops)).toBe(produced);
  });
});

describe('audit rows across a Postgres outage', () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let database: Database;
  let db: DatabasePool;
  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startOwnPostgres(), startOwnRedis()]);
    database = await createDatabase(postgres.databaseUrl, { maximumPoolSize: 2 });
    db = database.pool;
  });
  afterAll(async () => {
    await database?.end();
    await redis?.dispose();
    await postgres?.dispose();
  });

  it('drops a batch whose flush failed with the exact log line, and counts it in Postgres once Postgres is back', async () => {
    const writerLog = createCapturingLogger('audit-writer');
    const producer = createAuditProducer({ redis: commands(redis.url, 'own:'), db, source: 'console', settings: { AUDIT_QUEUE_CAPACITY: 1000 }, log: createCapturingLogger().log });
    const writer = createAuditWriter({ db, direct: database.direct, redis: commands(redis.url, 'own:'), log: writerLog.log, flushMs: HOUR, marks: await loadSequenceMarks(db) });
    for (let index = 0; index < 40; index += 1) producer.record(event(index));
    await producer.drain();
    await writer.flush();
    for (let index = 40; index < 70; index += 1) producer.record(event(index));
    await producer.drain();

    await postgres.stop();
    expect(await writer.flush()).toEqual({ taken: 30, written: 0, dropped: 30 });
    expect(writerLog.lines().some((line) => line.includes('[audit] flush failed, dropped batch: 30'))).toBe(true);
    await postgres.start();
    // The next flush finds nothing to write and stores the count it kept.
    await waitFor(async () => {
      await writer.flush();
      return (await readAuditDrops(db).catch(() => undefined))?.flushFailed === 30 ? true : undefined;
    }, 20_000, 'the kept count to be stored');
    expect(await written(db)).toBe(40);
    expect(await written(db) + total(await readAuditDrops(db))).toBe(70);
  });

  it('holds a batch read ahead while Postgres does not answer and writes it when Postgres is back: only the batch in flight is lost', async () => {
    const queue = commands(redis.url, 'own-ahead:');
    const producer = createAuditProducer({ redis: queue, db, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 1000 }, log: createCapturingLogger().log });
    // The first flush's connection waits for the test, so the loop reads the next batch ahead meanwhile.
    let letThrough: (() => void) | undefined;
    let held = true;
    const direct = {
      connect: async () => {
        if (held) await new Promise<void>((resolve) => (letThrough = resolve));
        return database.direct.connect();
      },
    };
    const writer = createAuditWriter({ db, direct, redis: commands(redis.url, 'own-ahead:'), log: createCapturingLogger('audit-writer').log, flushMs: 5, batchSize: 25, marks: await loadSequenceMarks(db) });
    const before = { written: await written(db), dropped: total(await readAuditDrops(db)) };
    for (let index = 0; index < 60; index += 1) producer.record(event(index));
    await producer.drain();

    writer.start();
    try {
      await waitFor(async () => ((await readAuditQueueDepth(queue)) === 10 && letThrough ? true : undefined), 10_000, 'the next batch to be read ahead');
      await postgres.stop();
      held = false;
      letThrough?.();
      // Postgres away: the batch read ahead stays in the writer, and nothing more leaves Redis.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await readAuditQueueDepth(queue)).toBe(10);
      await postgres.start();
      await waitFor(async () => ((await written(db).catch(() => 0)) - before.written === 35 ? true : undefined), 20_000, 'the rows after the lost batch');
    } finally {
      await writer.close();
    }
    const after = { written: await written(db), dropped: total(await readAuditDrops(db)) };
    expect({ written: after.written - before.written, dropped: after.dropped - before.dropped }).toEqual({ written: 35, dropped: 25 });
  });

  it('takes no row out of Redis while Postgres does not answer after a failed flush: at most the batch in flight is lost, and counted', async () => {
    const queue = commands(redis.url, 'own-pause:');
    const producer = createAuditProducer({ redis: queue, db, source: 'gateway', settings: { AUDIT_QUEUE_CAPACITY: 1000 }, log: createCapturingLogger().log });
    const writer = createAuditWriter({ db, direct: database.direct, redis: commands(redis.url, 'own-pause:'), log: createCapturingLogger('audit-writer').log, flushMs: HOUR, batchSize: 25, marks: await loadSequenceMarks(db) });
    const before = { written: await written(db), dropped: total(await readAuditDrops(db)) };
    for (let index = 0; index < 100; index += 1) producer.record(event(index));
    await producer.drain();

    await postgres.stop();
    expect(await writer.flush()).toEqual({ taken: 25, written: 0, dropped: 25 });
    for (let attempt = 0; attempt < 3; attempt += 1) expect(await writer.flush()).toEqual({ taken: 0, written: 0, dropped: 0 });
    expect(await readAuditQueueDepth(queue)).toBe(75);
    await postgres.start();

    await waitFor(async () => ((await writer.flush()).written > 0 ? true : undefined), 20_000, 'the writer to write again');
    while ((await writer.flush()).taken > 0);
    const after = { written: await written(db), dropped: total(await readAuditDrops(db)) };
    expect({ written: after.written - before.written, dropped: after.dropped - before.dropped }).toEqual({ written: 75, dropped: 25 });
  });
});
