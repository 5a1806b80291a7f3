import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { openSyncProducer, type OpenSyncProducer } from '@pcg/shared/queues';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { startOwnRedis, type OwnRedis } from '../../../test/support/own-stores.ts';
import { syncWorkerConfigSchema } from '../src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../src/service.ts';
import { connectionState, insertHubConnection, workerEnv } from './helpers.ts';

// The worker runs on a Redis of this file's own, stopped and started again: never the run's shared one.
const testEnv = useTestEnvironment();
let redis: OwnRedis;
let hub: HomeAssistantDouble;
let worker: RunningSyncWorker | undefined;
let probe: OpenSyncProducer | undefined;

beforeAll(async () => {
  redis = await startOwnRedis();
  hub = await startHomeAssistantDouble();
});
afterAll(async () => {
  await worker?.close();
  await probe?.close();
  await redis?.dispose();
  await hub?.close();
});

describe('a Redis restart under a running sync-worker', () => {
  it('brings the lost schedulers back and syncs again, with no restart of the worker', async () => {
    const connectionId = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
    const settings = { REDIS_URL: redis.url, REDIS_PREFIX: testEnv.redisPrefix };
    // A reconcile period far beyond the test, so only the reconnect can bring the scheduler back.
    const config = loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv({ ...settings, SCHEDULE_RECONCILE_MS: '3600000' })));
    const { log, lines } = createCapturingLogger('sync-worker');
    worker = await startSyncWorker(config, log);
    const firstSync = await waitFor(async () => (await connectionState(testEnv.db, connectionId)).last_synced_at ?? undefined, 20_000, 'the first sync');

    await redis.stop();
    await redis.start();
    probe = await openSyncProducer(settings, createCapturingLogger().log);
    // Redis came back empty; the worker puts the connection's scheduler back on its own…
    const schedules = await waitFor(async () => {
      const entries = await probe!.schedules();
      return entries.length > 0 ? entries : undefined;
    }, 20_000, 'the scheduler to come back');
    expect(schedules).toEqual([{ connectionId, everyMs: 15 * 60_000 }]);
    // …and the connection syncs again.
    const secondSync = await waitFor(async () => {
      const at = (await connectionState(testEnv.db, connectionId)).last_synced_at;
      return at && at > firstSync ? at : undefined;
    }, 20_000, 'a sync after the restart');
    expect(secondSync > firstSync).toBe(true);
    expect(lines().some((line) => line.includes('sync schedulers reconciled'))).toBe(true);
  });
});
