import { Queue, Worker } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamError } from '../errors/index.ts';
import { bullmqPrefix } from '../redis/index.ts';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { LiveJobSchema, QUEUES, syncSchedulerId, type LiveJobResult } from './job-catalogue.ts';
import { createLiveRequester, LiveTimeoutError } from './live-requester.ts';
import { blockingConnection } from './queue-connections.ts';
import { openSyncProducer } from './sync-producer.ts';

const testEnv = useTestEnvironment();
const { log } = createCapturingLogger('queues');
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });

describe('the job catalogue', () => {
  it('never retries live jobs and retries syncs with backoff', () => {
    expect(QUEUES.live.defaultJobOptions.attempts).toBe(1);
    expect(QUEUES.sync.defaultJobOptions.attempts).toBeGreaterThan(1);
    expect(QUEUES.sync.defaultJobOptions.backoff).toBeDefined();
  });
});

describe('the sync producer', () => {
  let producer: Awaited<ReturnType<typeof openSyncProducer>>;
  let queue: Queue;
  beforeAll(async () => {
    producer = await openSyncProducer(settings(), log);
    queue = new Queue('sync', { connection: blockingConnection(settings(), 'test'), prefix: bullmqPrefix(settings()) });
  });
  afterAll(async () => {
    await producer.close();
    await queue.close();
  });

  it('keeps one scheduler per connection, moved in place when the interval changes, and removes it', async () => {
    const id = randomUUID();
    await producer.schedule(id, 15);
    expect(await queue.getWaitingCount()).toBe(1); // the first run starts at once
    await producer.schedule(id, 30);
    const schedulers = await queue.getJobSchedulers();
    expect(schedulers.filter((s) => s.key === syncSchedulerId(id))).toEqual([expect.objectContaining({ every: 30 * 60_000 })]);
    expect(await producer.schedules()).toContainEqual({ connectionId: id, everyMs: 30 * 60_000 });
    await producer.unschedule(id);
    expect((await producer.schedules()).map((entry) => entry.connectionId)).not.toContain(id);
  });

  it('deduplicates a manual sync asked for while one is waiting, and refuses a malformed id before add()', async () => {
    const id = randomUUID();
    const first = await producer.requestSync(id);
    const second = await producer.requestSync(id);
    expect(second).toBe(first);
    expect((await queue.getJob(first))?.data).toEqual({ connectionId: id, reason: 'manual' });
    await expect(producer.requestSync('not-a-uuid')).rejects.toThrow();
  });
});

describe('the live requester', () => {
  let requester: Awaited<ReturnType<typeof createLiveRequester>>;
  let worker: Worker | undefined;
  const answers = new Map<string, LiveJobResult>();

  beforeAll(async () => {
    requester = await createLiveRequester(settings(), log, { timeoutMs: 400 });
  });
  afterAll(async () => {
    await worker?.close();
    await requester.close();
  });

  const startWorker = () => {
    worker = new Worker(
      'live',
      async (job) => {
        const data = LiveJobSchema.parse(job.data);
        const key = data.kind === 'fetch_live' ? data.object : data.name;
        return answers.get(key) ?? { status: 'failed', message: 'no answer arranged' };
      },
      { connection: blockingConnection(settings(), 'test-live-worker'), prefix: bullmqPrefix(settings()) },
    );
    worker.on('error', () => undefined);
  };

  it('times out, and takes back a request that no worker took', async () => {
    const connectionId = randomUUID();
    await expect(requester.invokeAction({ connectionId, name: 'home.light.turn_on' })).rejects.toThrow(LiveTimeoutError);
    const queue = new Queue('live', { connection: blockingConnection(settings(), 'probe'), prefix: bullmqPrefix(settings()) });
    try {
      expect(await queue.getJobCounts('waiting', 'active', 'delayed')).toEqual({ waiting: 0, active: 0, delayed: 0 });
    } finally {
      await queue.close();
    }
  });

  it('carries answers back, and a worker failure as an UpstreamError with its safe message', async () => {
    startWorker();
    const connectionId = randomUUID();
    answers.set('home.entity', { status: 'answered', value: { rows: [{ entity_id: 'light.kitchen', state: 'on' }] } });
    answers.set('home.light.turn_on', { status: 'answered', value: { ok: false, error: 'the hub rejected it' } });
    answers.set('home.lock.open', { status: 'failed', message: 'the hub did not answer' });
    expect(await requester.fetchLive({ connectionId, object: 'home.entity' })).toEqual({ rows: [{ entity_id: 'light.kitchen', state: 'on' }] });
    expect(await requester.invokeAction({ connectionId, name: 'home.light.turn_on' })).toEqual({ ok: false, error: 'the hub rejected it' });
    const failure = await requester.invokeAction({ connectionId, name: 'home.lock.open' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect((failure as Error).message).toBe('the hub did not answer');
  });
});
