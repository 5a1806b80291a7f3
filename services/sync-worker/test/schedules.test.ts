import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { openSyncProducer, type OpenSyncProducer } from '@pcg/shared/queues';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { createConnectorRegistry } from '../src/connectors/registry.ts';
import { createConnectionStore } from '../src/sync/connection-store.ts';
import { createScheduleReconciler, reconcileSchedules } from '../src/sync/schedule-reconciler.ts';
import { insertHubConnection } from './helpers.ts';

const testEnv = useTestEnvironment();
const registry = createConnectorRegistry();
let producer: OpenSyncProducer;

beforeAll(async () => {
  producer = await openSyncProducer({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, createCapturingLogger().log);
});
afterAll(async () => {
  await producer?.close();
});
beforeEach(async () => {
  for (const entry of await producer.schedules()) await producer.unschedule(entry.connectionId);
  await testEnv.db.query(sql.unsafe`DELETE FROM connections`);
});

const hub = (status: 'active' | 'paused' = 'active') => insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:1', token: 't' }, status);
const setSyncInterval = (id: string, minutes: number) =>
  testEnv.db.query(sql.unsafe`UPDATE connections SET sync_interval_minutes = ${minutes} WHERE id = ${id}::uuid`);
const schedules = async () => new Map((await producer.schedules()).map((entry) => [entry.connectionId, entry.everyMs]));

describe('reconciling the sync schedulers with the connections table', () => {
  it('adds a missing scheduler, fixes a changed interval, removes a stale one and leaves a right one alone', async () => {
    const missing = await hub();
    const changed = await hub();
    const right = await hub();
    const paused = await hub('paused');
    const gone = randomUUID();
    await producer.schedule(changed, 15);
    await producer.schedule(right, 15);
    await producer.schedule(paused, 15);
    await producer.schedule(gone, 15);
    await setSyncInterval(changed, 5);

    const store = createConnectionStore(testEnv.db);
    const result = await reconcileSchedules(store, producer, registry);
    expect({ added: result.added, changed: result.changed, removed: [...result.removed].sort() }).toEqual({
      added: [missing],
      changed: [changed],
      removed: [paused, gone].sort(),
    });
    expect(await schedules()).toEqual(new Map([[missing, 15 * 60_000], [changed, 5 * 60_000], [right, 15 * 60_000]]));
    // A second run finds nothing to do.
    expect(await reconcileSchedules(store, producer, registry)).toEqual({ added: [], changed: [], removed: [] });
  });

  it('runs again on its own every interval, so a scheduler lost in between comes back without a trigger', async () => {
    const id = await hub();
    const store = createConnectionStore(testEnv.db);
    const reconciler = createScheduleReconciler({ reconcile: () => reconcileSchedules(store, producer, registry), log: createCapturingLogger().log, everyMs: 200 });
    try {
      await waitFor(async () => ((await schedules()).has(id) ? true : undefined), 5_000, 'the scheduler to be created');
      await producer.unschedule(id);
      await waitFor(async () => ((await schedules()).has(id) ? true : undefined), 5_000, 'the lost scheduler to come back');
    } finally {
      await reconciler.stop();
    }
  });
});
