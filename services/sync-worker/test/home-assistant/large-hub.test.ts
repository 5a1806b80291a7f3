import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { DEMO_ENTITIES, DEMO_SERVICES, startHomeAssistantDouble, type HomeAssistantDouble, type SeedEntity } from '@pcg/testkit/doubles';
import { blockingConnection, openSyncProducer, type SyncJobResult } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../../src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../src/service.ts';
import { insertHubConnection, workerEnv } from '../helpers.ts';

/**
 * A hub with many entities against the double that refuses, as Home Assistant's HTTP server does, a request
 * URL over 8190 bytes (home-assistant/supervisor#3137): the connector's incremental history read must stay
 * under it, or every incremental sync would fall back to a full one.
 */
const testEnv = useTestEnvironment();
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
let hub: HomeAssistantDouble;
let worker: RunningSyncWorker;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let queue: Queue;
let connectionId: string;

/** 1,500 sensors with long ids, as a large installation names them. */
const MANY: SeedEntity[] = Array.from({ length: 1500 }, (_, i) => ({
  entity_id: `sensor.upstairs_bedroom_climate_multisensor_battery_level_${String(i).padStart(4, '0')}`,
  state: String(i % 100),
  attributes: { unit_of_measurement: '%' },
}));

beforeAll(async () => {
  hub = await startHomeAssistantDouble({ entities: [...DEMO_ENTITIES, ...MANY], services: DEMO_SERVICES });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv({ SOURCE_TIMEOUT_MS: '5000' }))), createCapturingLogger('sync-worker').log);
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'test'), prefix: bullmqPrefix(settings()) });
  connectionId = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
});
afterAll(async () => {
  await worker?.close();
  await producer?.close();
  await queue?.close();
  await hub?.close();
});

async function syncNow(): Promise<SyncJobResult> {
  const jobId = await producer.requestSync(connectionId);
  await waitFor(async () => (['completed', 'failed'].includes(await queue.getJobState(jobId)) ? true : undefined), 30_000, `sync job ${jobId}`);
  const job: Job | undefined = await queue.getJob(jobId);
  return job?.returnvalue as SyncJobResult;
}

describe('a hub with 1,500 entities', () => {
  it('syncs incrementally through history requests that each stay under the hub’s 8190-byte URL limit', async () => {
    expect(await syncNow()).toMatchObject({ outcome: 'synced', mode: 'full' });
    const from = hub.requests.length;
    hub.setState('sensor.upstairs_bedroom_climate_multisensor_battery_level_0042', '7');
    expect(await syncNow()).toMatchObject({ outcome: 'synced', mode: 'incremental', written: 1 });
    const history = hub.requests.slice(from).filter((request) => request.path.startsWith('/api/history/period'));
    expect(history.length).toBeGreaterThan(1);
    expect(Math.max(...history.map((request) => Buffer.byteLength(request.path)))).toBeLessThanOrEqual(8190);
  });
});
