import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { UpstreamError } from '@pcg/shared/errors';
import { createLiveRequester, openSyncProducer } from '@pcg/shared/queues';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../src/service.ts';
import { connectionState, entityRows, insertHubConnection, workerEnv } from './helpers.ts';

const testEnv = useTestEnvironment();
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
let hub: HomeAssistantDouble;
let worker: RunningSyncWorker;
let live: Awaited<ReturnType<typeof createLiveRequester>>;
let connectionId: string;

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv({ SOURCE_TIMEOUT_MS: '2000' }))), createCapturingLogger('sync-worker').log);
  live = await createLiveRequester(settings(), createCapturingLogger().log, { timeoutMs: 3_000 });
  connectionId = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
  // A first sync fills the cache and learns which services answer with data.
  const producer = await openSyncProducer(settings(), createCapturingLogger().log);
  await producer.requestSync(connectionId);
  await producer.close();
  await waitFor(async () => ((await connectionState(testEnv.db, connectionId)).last_synced_at ? true : undefined), 10_000, 'the first sync');
});
afterAll(async () => {
  await live?.close();
  await worker?.close();
  await hub?.close();
});

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as Error);

describe('fetch_live', () => {
  it('reads current states from the hub, not the cache, and writes nothing', async () => {
    hub.setState('sensor.kitchen_temperature', '23.0');
    const before = await entityRows(testEnv.db, connectionId);
    const { rows } = await live.fetchLive({ connectionId, object: 'home.entity', where: [{ field: 'domain', op: 'eq', value: 'sensor' }] });
    expect(rows.map((row) => row.entity_id).sort()).toEqual(['sensor.kitchen_temperature', 'sensor.outdoor_humidity']);
    expect(rows.find((row) => row.entity_id === 'sensor.kitchen_temperature')).toMatchObject({ state: '23.0', source_id: 'sensor.kitchen_temperature' });
    expect(await entityRows(testEnv.db, connectionId)).toEqual(before);
  });

  it('reads one entity by its gateway id or by entity_id, and nothing for an unknown one', async () => {
    const cached = (await entityRows(testEnv.db, connectionId)).find((row) => row.source_id === 'lock.front_door');
    const byGatewayId = await live.fetchLive({ connectionId, object: 'home.entity', id: cached?.id });
    expect(byGatewayId.rows).toMatchObject([{ entity_id: 'lock.front_door', state: 'locked' }]);
    const from = hub.requests.length;
    const byEntity = await live.fetchLive({ connectionId, object: 'home.entity', where: [{ field: 'entity_id', op: 'eq', value: 'lock.front_door' }] });
    expect(byEntity.rows).toHaveLength(1);
    expect(hub.requests.slice(from).map((request) => request.path)).toEqual(['/api/states/lock.front_door']);
    expect((await live.fetchLive({ connectionId, object: 'home.entity', id: 'light.nowhere' })).rows).toEqual([]);
  });

  it('refuses a filter it cannot apply, with a message an agent can act on', async () => {
    const error = await rejection(live.fetchLive({ connectionId, object: 'home.entity', where: [{ field: 'state', op: 'gt', value: '3' }] }));
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error?.message).toContain("not 'gt'");
  });

  it('gives up with a timeout when the hub does not answer', async () => {
    const release = hub.hang('/api/states');
    try {
      const error = await rejection(live.fetchLive({ connectionId, object: 'home.entity' }));
      expect(error?.message).toMatch(/did not answer/);
    } finally {
      release();
    }
  });

  it('says that a pushed source cannot be read live', async () => {
    const phone = randomUUID();
    await testEnv.db.query(sql.unsafe`
      INSERT INTO connections (id, user_id, provider, sector, display_name) VALUES (${phone}::uuid, 1, 'health-auto-export', 'health', 'Phone')`);
    const error = await rejection(live.fetchLive({ connectionId: phone, object: 'health.sample' }));
    expect(error?.message).toBe('Phone cannot be read live (its data is pushed to the gateway); query the cache instead');
  });

  it('says there is no connector, not that the data is pushed, for a provider it does not run (issue 20)', async () => {
    const seeded = randomUUID();
    await testEnv.db.query(sql.unsafe`
      INSERT INTO connections (id, user_id, provider, sector, display_name) VALUES (${seeded}::uuid, 1, 'demo', 'home', 'Demo home')`);
    const error = await rejection(live.fetchLive({ connectionId: seeded, object: 'home.entity' }));
    expect(error?.message).toBe("no connector for provider 'demo' runs in the sync-worker, so there is no source to ask; query the cache instead");
  });
});

describe('invoke_action', () => {
  it('calls the service, answers with what changed, and updates the cache', async () => {
    const result = await live.invokeAction({ connectionId, name: 'home.light.turn_on', arguments: { entity_id: 'light.living_room', brightness: 120 } });
    expect(result).toMatchObject({ ok: true, result: { changed: [{ entity_id: 'light.living_room', state: 'on', attributes: { brightness: 120 } }] } });
    expect(hub.state('light.living_room')?.state).toBe('on');
    expect((await entityRows(testEnv.db, connectionId)).find((row) => row.source_id === 'light.living_room')?.state).toBe('on');
  });

  it('asks for the response of a service that answers with data', async () => {
    const result = await live.invokeAction({ connectionId, name: 'home.weather.get_forecasts', arguments: { entity_id: 'weather.home', type: 'daily' } });
    expect(result.ok).toBe(true);
    expect(result.ok && (result.result as { response: Record<string, { forecast: unknown[] }> }).response['weather.home']?.forecast).toHaveLength(3);
  });

  it.each([
    ['an unknown service', 'home.light.explode', { entity_id: 'light.kitchen' }, 'the hub rejected home.light.explode: 400: Bad Request'],
    ['data the service refuses', 'home.light.turn_on', { entity_id: 'light.kitchen', brightness: 999 }, 'the hub rejected home.light.turn_on: 400: Bad Request'],
    ['a name of the wrong form', 'home.light', {}, "unknown action 'home.light': hub actions are named home.<domain>.<service>"],
  ])('answers ok:false when the hub rejects %s', async (_what, name, args, error) => {
    expect(await live.invokeAction({ connectionId, name, arguments: args })).toEqual({ ok: false, error });
  });

  it('never retries an action, even when the hub fails', async () => {
    hub.failNext('/api/services/switch/toggle', 500);
    const from = hub.requests.length;
    const error = await rejection(live.invokeAction({ connectionId, name: 'home.switch.toggle', arguments: { entity_id: 'switch.coffee_maker' } }));
    expect(error?.message).toBe('the hub answered HTTP 500; the action may or may not have been carried out');
    expect(hub.requests.slice(from).filter((request) => request.path.startsWith('/api/services/switch/toggle'))).toHaveLength(1);
  });

  it('marks the connection needs-sign-in when the hub refuses the token', async () => {
    hub.rotateToken();
    const error = await rejection(live.invokeAction({ connectionId, name: 'home.lock.unlock', arguments: { entity_id: 'lock.front_door' } }));
    expect(error?.message).toBe("the source refused the connection's credentials; the operator must sign in again");
    expect(await connectionState(testEnv.db, connectionId)).toMatchObject({ status: 'needs_sign_in' });
    expect(hub.state('lock.front_door')?.state).toBe('locked');
  });
});
