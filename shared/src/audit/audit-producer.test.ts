import { beforeEach, describe, expect, it } from 'vitest';
import { createRedis } from '../redis/index.ts';
import { createCapturingLogger, useTestEnvironment } from '../testing/index.ts';
import { createAuditProducer } from './audit-producer.ts';
import { AUDIT_DROPS_KEY, AUDIT_QUEUE_KEY, readAuditQueueStatus, takeAuditBatch } from './audit-queue.ts';
import { AUDIT_LOG_LINES, QueuedAuditRowSchema, type AuditEvent } from './audit-types.ts';

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
  await testEnv.redis.del(AUDIT_QUEUE_KEY, AUDIT_DROPS_KEY);
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
    expect(QueuedAuditRowSchema.parse(JSON.parse(entry ?? 'null'))).toEqual({
      userId: 1, agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', denyReason: null,
      argsJson: '{"object":"finance.transaction","apiKey":"[redacted]"}', resultCount: 0, outcome: 'ok', requestId: 'r-1',
    });
    expect(producer.stats()).toEqual({ queued: 1, overflow: 0, failed: 0, invalid: 0 });
  });

  it('keeps the order rows were recorded in', async () => {
    const producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 100 }, log: createCapturingLogger().log });
    for (let index = 0; index < 20; index += 1) producer.record(event({ requestId: `r-${index}` }));
    await producer.drain();
    const entries = await takeAuditBatch(testEnv.redis, 100);
    expect(entries.map((entry) => (JSON.parse(entry) as { requestId: string }).requestId)).toEqual(
      Array.from({ length: 20 }, (_, index) => `r-${index}`),
    );
  });

  it('drops past capacity with the exact log line, counts the drop in Redis, and takes rows again once there is room', async () => {
    const { log, lines } = createCapturingLogger();
    const producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 3 }, log });
    const results = [];
    for (let index = 0; index < 5; index += 1) results.push(await producer.enqueue(event({ requestId: `r-${index}` })));
    expect(results).toEqual(['queued', 'queued', 'queued', 'overflow', 'overflow']);
    expect(messages(lines()).filter((msg) => msg === AUDIT_LOG_LINES.queueOverflow)).toHaveLength(2);
    expect(await readAuditQueueStatus(testEnv.redis)).toEqual({ queued: 3, dropped: { queueOverflow: 2, flushFailed: 0, unreadable: 0 } });
    expect(producer.stats()).toMatchObject({ queued: 3, overflow: 2 });

    await takeAuditBatch(testEnv.redis, 1);
    expect(await producer.enqueue(event())).toBe('queued');
  });

  it('never lets producers on separate connections push past capacity together', async () => {
    const clients = [0, 1, 2].map(() => createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'commands'));
    try {
      const producers = clients.map((redis) => createAuditProducer({ redis, settings: { AUDIT_QUEUE_CAPACITY: 50 }, log: createCapturingLogger().log }));
      await Promise.all(producers.flatMap((producer) => Array.from({ length: 100 }, () => producer.enqueue(event()))));
      const status = await readAuditQueueStatus(testEnv.redis);
      expect(status.queued).toBe(50);
      expect(status.dropped.queueOverflow).toBe(250);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('never throws when Redis is away: the row is dropped and logged', async () => {
    const { log, lines } = createCapturingLogger();
    const away = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    away.on('error', () => {});
    try {
      const producer = createAuditProducer({ redis: away, settings: { AUDIT_QUEUE_CAPACITY: 10 }, log });
      expect(() => producer.record(event())).not.toThrow();
      await producer.drain();
      expect(producer.stats()).toMatchObject({ queued: 0, failed: 1 });
      expect(messages(lines())).toContain('[audit] enqueue failed — dropped');
    } finally {
      away.disconnect();
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
