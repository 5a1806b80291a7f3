import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { blockingConnection, openSyncProducer } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../src/config.ts';
import { startSyncWorker } from '../src/service.ts';
import { connectionState, insertHubConnection, workerEnv } from './helpers.ts';

const testEnv = useTestEnvironment();
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
let hub: HomeAssistantDouble;
let queue: Queue;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;

const start = (graceMs: number) =>
  startSyncWorker(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv({ SHUTDOWN_GRACE_MS: String(graceMs) }))), createCapturingLogger('sync-worker').log);

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'test'), prefix: bullmqPrefix(settings()) });
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
});
afterAll(async () => {
  await producer?.close();
  await queue?.close();
  await hub?.close();
});

describe('graceful shutdown', () => {
  it('finishes the job in hand when it ends within the grace period', async () => {
    const worker = await start(10_000);
    const connectionId = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
    const stall = hub.stall('/api/services');
    const jobId = await producer.requestSync(connectionId);
    await stall.arrived;
    const closing = worker.close();
    stall.release();
    await closing;
    expect(await queue.getJobState(jobId)).toBe('completed');
    expect((await connectionState(testEnv.db, connectionId)).last_synced_at).not.toBeNull();
  });

  it('puts the job in hand back in the queue, unharmed, when it outlasts the grace period', async () => {
    const worker = await start(200);
    const connectionId = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
    const stall = hub.stall('/api/services');
    const jobId = await producer.requestSync(connectionId);
    await stall.arrived;
    await worker.close();
    expect(['delayed', 'waiting']).toContain(await queue.getJobState(jobId));
    expect((await queue.getJob(jobId))?.attemptsMade).toBe(0);
    expect(await connectionState(testEnv.db, connectionId)).toMatchObject({ status: 'active', last_error: null, last_synced_at: null });

    stall.release();
    const next = await start(1_000);
    try {
      await waitFor(async () => ((await queue.getJobState(jobId)) === 'completed' ? true : undefined), 10_000, 'the returned job to complete');
      expect((await queue.getJob(jobId))?.returnvalue).toMatchObject({ outcome: 'synced' });
      expect((await connectionState(testEnv.db, connectionId)).last_synced_at).not.toBeNull();
    } finally {
      await next.close();
    }
  });
});
