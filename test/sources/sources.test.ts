import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { haePayloadV2, sendHealthPush, startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { findActionConnection, listConnectionActions } from '@pcg/shared/live';
import { createLiveRequester } from '@pcg/shared/queues';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { z } from 'zod';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// The Console and the sync-worker together, as `npm start` runs them: the Console only writes rows and
// queues work; the worker alone talks to the hub, with the key both share.
const testEnv = useTestEnvironment();
const key = randomBytes(32).toString('base64');
let hub: HomeAssistantDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let live: Awaited<ReturnType<typeof createLiveRequester>>;

const post = async (path: string, body?: unknown) => {
  const response = await fetch(`${consoleService.address}${path}`, {
    method: 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await response.json()) as { connection: { id: string }; ingestSecret?: string };
};

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: key, REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  live = await createLiveRequester({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, createCapturingLogger().log, { timeoutMs: 5_000 });
});
afterAll(async () => {
  await live?.close();
  await consoleService?.close();
  await worker?.close();
  await hub?.close();
});

describe('a hub connected in the Console', () => {
  let id: string;

  it('is synced by the worker: states cached, actions stored for list_actions', async () => {
    id = (await post('/api/connections', { provider: 'home-assistant', credentials: { baseUrl: hub.url, token: hub.token } })).connection.id;
    await waitFor(async () => ((await listConnectionActions(testEnv.db, ['home'])).length > 0 ? true : undefined), 10_000, 'the first sync');
    const entities = await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM home_entities WHERE connection_id = ${id}::uuid`);
    expect(entities).toBe(9);
    expect((await listConnectionActions(testEnv.db, ['home'])).map((action) => action.name)).toContain('home.switch.toggle');
  });

  it('serves live reads and actions through the live queue', async () => {
    const { rows } = await live.fetchLive({ connectionId: id, object: 'home.entity', where: [{ field: 'entity_id', op: 'eq', value: 'switch.coffee_maker' }] });
    expect(rows).toMatchObject([{ state: 'off' }]);
    const connectionId = await findActionConnection(testEnv.db, 'home.switch.toggle');
    expect(connectionId).toBe(id);
    expect(await live.invokeAction({ connectionId: id, name: 'home.switch.toggle', arguments: { entity_id: 'switch.coffee_maker' } })).toMatchObject({ ok: true });
    expect(hub.state('switch.coffee_maker')?.state).toBe('on');
    expect(await live.invokeAction({ connectionId: id, name: 'home.switch.explode', arguments: {} })).toEqual({ ok: false, error: 'the hub rejected home.switch.explode: 400: Bad Request' });
  });

  it('syncs again when asked from the Console', async () => {
    hub.setState('sensor.kitchen_temperature', '25.5');
    await post(`/api/connections/${id}/sync`);
    await waitFor(
      async () =>
        (await testEnv.db.maybeOneFirst(sql.type(z.object({ state: z.string() }))`
          SELECT state FROM home_entities WHERE connection_id = ${id}::uuid AND source_id = 'sensor.kitchen_temperature'`)) === '25.5'
          ? true
          : undefined,
      10_000,
      'the manual sync',
    );
  });
});

describe('a phone connected in the Console', () => {
  it('pushes its export into the health tables', async () => {
    const phone = await post('/api/connections', { provider: 'health-auto-export' });
    const response = await sendHealthPush(`${consoleService.address}/api/ingest/${phone.connection.id}`, phone.ingestSecret ?? '', haePayloadV2());
    expect(response.status).toBe(200);
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM health_workouts`)).toBe(1);
  });
});
