import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { blockingConnection, openSyncProducer, type SyncJobResult } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../src/service.ts';
import { connectionState, entityRows, insertHubConnection, workerEnv } from './helpers.ts';

const testEnv = useTestEnvironment();
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
let hub: HomeAssistantDouble;
let worker: RunningSyncWorker;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let queue: Queue;
let connectionId: string;

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv())), createCapturingLogger('sync-worker').log);
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

/** Queues a manual sync and waits until the job has completed or failed for good. */
async function syncNow(id = connectionId, timeoutMs = 15_000): Promise<Job> {
  const jobId = await producer.requestSync(id);
  await waitFor(
    async () => {
      const state = await queue.getJobState(jobId);
      return state === 'completed' || state === 'failed' ? true : undefined;
    },
    timeoutMs,
    `sync job ${jobId} to finish`,
  );
  // Read the job only once it is finished, so its counters are final.
  const job = await queue.getJob(jobId);
  if (!job) throw new Error(`job ${jobId} vanished`);
  return job;
}

const result = (job: Job) => job.returnvalue as SyncJobResult;
const mark = () => hub.requests.length;
const pathsSince = (from: number) => hub.requests.slice(from).map((request) => request.path.split('?')[0]);

describe('a Home Assistant sync', () => {
  it('first syncs in full: every entity, the service catalogue as actions, and a cursor', async () => {
    const from = mark();
    const job = await syncNow();
    expect(result(job)).toMatchObject({ outcome: 'synced', mode: 'full', written: 9 });
    expect(pathsSince(from)).toEqual(['/api/states', '/api/services', '/api/config']);
    const rows = await entityRows(testEnv.db, connectionId);
    expect(rows.map((row) => row.source_id)).toContain('light.kitchen');
    expect(rows.find((row) => row.source_id === 'sensor.kitchen_temperature')).toMatchObject({ state: '21.5', attributes: { unit_of_measurement: '°C' } });
    const state = await connectionState(testEnv.db, connectionId);
    expect(state).toMatchObject({ status: 'active', last_error: null });
    expect(state.last_synced_at).not.toBeNull();
    // The hub's own zone, the default of the person's (issue 20).
    expect(await testEnv.db.oneFirst(sql.unsafe`SELECT source_time_zone FROM connections WHERE id = ${connectionId}`)).toBe('Europe/Berlin');
    const turnOn = state.actions.find((action) => action.name === 'home.light.turn_on');
    expect(turnOn).toMatchObject({ sector: 'home', input_schema: { type: 'object', properties: { brightness: { type: 'number', minimum: 0, maximum: 255 } } } });
    expect(state.actions.every((action) => /^home\.[a-z0-9_]+\.[a-z0-9_]+$/.test(action.name))).toBe(true);
  });

  it('then syncs incrementally, fetching only what changed since the cursor', async () => {
    const before = await entityRows(testEnv.db, connectionId);
    hub.setState('switch.coffee_maker', 'on');
    const from = mark();
    const job = await syncNow();
    expect(result(job)).toMatchObject({ outcome: 'synced', mode: 'incremental', written: 1 });
    const paths = pathsSince(from);
    expect(paths).toHaveLength(1);
    expect(paths[0]).toMatch(/^\/api\/history\/period\/\d{4}-/);
    const after = await entityRows(testEnv.db, connectionId);
    expect(after.find((row) => row.source_id === 'switch.coffee_maker')?.state).toBe('on');
    for (const row of after.filter((candidate) => candidate.source_id !== 'switch.coffee_maker')) {
      expect(row.synced_at).toBe(before.find((old) => old.source_id === row.source_id)?.synced_at);
    }
    expect(after.map((row) => row.id)).toEqual(before.map((row) => row.id));
  });

  it('syncs in full again when the last full sync is old: new entities arrive, vanished ones go', async () => {
    await testEnv.db.query(sql.unsafe`
      UPDATE connections SET sync_cursor = jsonb_set(sync_cursor, '{fullAt}', '"2000-01-01T00:00:00.000Z"') WHERE id = ${connectionId}::uuid`);
    hub.removeEntity('sensor.outdoor_humidity');
    hub.setState('light.hallway', 'off', { friendly_name: 'Hallway' });
    const job = await syncNow();
    expect(job.failedReason).toBeUndefined();
    expect(result(job)).toMatchObject({ mode: 'full', removed: 1 });
    const ids = (await entityRows(testEnv.db, connectionId)).map((row) => row.source_id);
    expect(ids).toContain('light.hallway');
    expect(ids).not.toContain('sensor.outdoor_humidity');
  });
});

describe('a source that fails', () => {
  it('answering 500 is retried with growing backoff; the connection shows it; nothing cached is lost', async () => {
    const before = await entityRows(testEnv.db, connectionId);
    hub.failNext('/api/history', 500, { times: 2 });
    const from = mark();
    const seen = waitFor(async () => ((await connectionState(testEnv.db, connectionId)).last_error?.includes('HTTP 500') ? true : undefined), 10_000, 'the 500 to show');
    const job = await syncNow();
    await seen;
    expect(await job.getState()).toBe('completed');
    expect(job.attemptsMade).toBe(3); // two failed attempts and the one that succeeded
    const attempts = hub.requests.slice(from).map((request) => request.at);
    expect(attempts).toHaveLength(3);
    const [first = 0, second = 0, third = 0] = attempts;
    expect(second - first).toBeGreaterThanOrEqual(80); // SYNC_BACKOFF_MS 100, jitter ±20 %
    expect(third - second).toBeGreaterThan(second - first);
    expect(await connectionState(testEnv.db, connectionId)).toMatchObject({ status: 'active', last_error: null });
    expect((await entityRows(testEnv.db, connectionId)).length).toBe(before.length);
  });

  it('answering 500 on every attempt marks the connection error, keeps the cache, and the next good sync clears it', async () => {
    const before = await entityRows(testEnv.db, connectionId);
    hub.failNext('/api/history', 503, { times: 5 });
    const job = await syncNow();
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(5);
    expect(await connectionState(testEnv.db, connectionId)).toMatchObject({ status: 'error', last_error: 'the hub answered HTTP 503' });
    expect(await entityRows(testEnv.db, connectionId)).toEqual(before);
    await syncNow();
    expect(await connectionState(testEnv.db, connectionId)).toMatchObject({ status: 'active', last_error: null });
  });

  it('answering 429 waits the Retry-After without using an attempt', async () => {
    hub.failNext('/api/history', 429, { retryAfter: '1' });
    const from = mark();
    const seen = waitFor(async () => ((await connectionState(testEnv.db, connectionId)).last_error?.includes('rate limiting') ? true : undefined), 10_000, 'the 429 to show');
    const job = await syncNow();
    await seen;
    expect(await job.getState()).toBe('completed');
    expect(job.attemptsMade).toBe(1); // the rate-limited run did not count
    const [limited, retried] = hub.requests.slice(from);
    expect((retried?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(950);
    expect((await connectionState(testEnv.db, connectionId)).last_error).toBeNull();
  });

  it('not answering at all times out, shows it, keeps the cache, and recovers when the source is back', async () => {
    const before = await entityRows(testEnv.db, connectionId);
    const release = hub.hang('/api/history');
    const jobId = await producer.requestSync(connectionId);
    await waitFor(async () => ((await connectionState(testEnv.db, connectionId)).last_error === 'the hub did not answer within 0.5 s; retrying' ? true : undefined), 10_000, 'the timeout to show');
    expect(await entityRows(testEnv.db, connectionId)).toEqual(before);
    release();
    await waitFor(async () => ((await (await queue.getJob(jobId))?.getState()) === 'completed' ? true : undefined), 15_000, 'the sync to finish');
    expect(await connectionState(testEnv.db, connectionId)).toMatchObject({ status: 'active', last_error: null });
  });

  it('refusing the token (401) stops syncing: needs sign-in, scheduler removed, no retry, cache kept', async () => {
    const other = await startHomeAssistantDouble();
    try {
      const id = await insertHubConnection(testEnv.db, { baseUrl: other.url, token: other.token });
      await producer.schedule(id, 15); // its first run starts at once
      await waitFor(async () => ((await connectionState(testEnv.db, id)).last_synced_at && (await queue.getActiveCount()) === 0 ? true : undefined), 10_000, 'the first sync');
      const before = await entityRows(testEnv.db, id);
      other.rotateToken();
      const job = await syncNow(id);
      expect(await job.getState()).toBe('failed');
      expect(job.attemptsMade).toBe(1);
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'needs_sign_in', last_error: 'the hub refused the credentials (HTTP 401); sign in again' });
      expect((await producer.schedules()).map((entry) => entry.connectionId)).not.toContain(id);
      expect(await entityRows(testEnv.db, id)).toEqual(before);
    } finally {
      await other.close();
    }
  });
});

describe('a hub answering oddly', () => {
  it('keeps the cache when the hub lists no entities at all', async () => {
    const other = await startHomeAssistantDouble({ entities: [] });
    try {
      const id = await insertHubConnection(testEnv.db, { baseUrl: other.url, token: other.token });
      await testEnv.db.query(sql.unsafe`
        INSERT INTO home_entities (connection_id, source, source_id, entity_id, domain, state)
        VALUES (${id}::uuid, 'home-assistant', 'light.kept', 'light.kept', 'light', 'on')`);
      expect(result(await syncNow(id))).toMatchObject({ mode: 'full', removed: 0 });
      expect((await entityRows(testEnv.db, id)).map((row) => row.source_id)).toEqual(['light.kept']);
    } finally {
      await other.close();
    }
  });

  it('falls back to a full sync when the hub refuses the history query', async () => {
    hub.failNext('/api/history', 400);
    const from = mark();
    const job = await syncNow();
    expect(result(job)).toMatchObject({ outcome: 'synced', mode: 'full' });
    expect(pathsSince(from).map((p) => (p?.startsWith('/api/history/period/') ? '/api/history/period/…' : p))).toEqual(['/api/history/period/…', '/api/states', '/api/services', '/api/config']);
  });
});
