import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { NO_SECTORS_GRANTED } from '@pcg/shared/sign-ins';
import { startWhoopDouble, type WhoopDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { WHOOP_OVERLAP_MS } from '../../services/sync-worker/src/connectors/whoop/whoop-connector.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { signInThroughConsole, syncThroughConsole } from '../support/console-sign-in.ts';

// The WHOOP-style wearable end to end (issue 17): the Console's sign-in, the sync-worker's exchange,
// syncs and token refresh against the local double, and what the operator's reads then return.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
let whoop: WhoopDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
const workerLog = createCapturingLogger('sync-worker');

type Rows = { rows: Array<Record<string, unknown>>; has_more: boolean };
async function read(object: string, where: unknown[] = []): Promise<Rows['rows']> {
  const sector = object.split('.')[0];
  const answer = await fetch(`${consoleService.address}/api/data/${sector}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ object, where, limit: 200 }),
  });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as Rows).rows;
}

async function signIn(granted: string[]) {
  whoop.state.grantedScopes = granted;
  const signedIn = await signInThroughConsole(consoleService.address, 'whoop');
  expect(signedIn.startStatus).toBe(302);
  return signedIn;
}

const connection = async (id: string) => createConnectionQueries(testEnv.db).get(id);
const syncAndWait = (id: string) => syncThroughConsole(testEnv.db, consoleService.address, id);

beforeAll(async () => {
  whoop = await startWhoopDouble({ days: 10 });
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', WHOOP_BASE_URL: whoop.url });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), workerLog.log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  const saved = await fetch(`${consoleService.address}/api/connect/whoop/app`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(whoop.client),
  });
  expect(saved.status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await whoop?.close();
});

describe('the WHOOP-style wearable', () => {
  let id = '';

  it('with read:cycles and offline only makes no connection and says the sign-in granted no sectors (spec 2.5, 7)', async () => {
    const answer = await signIn(['read:cycles', 'offline', 'read:profile']);
    expect(answer.status).toBe(422);
    expect(answer.body.error).toBe(NO_SECTORS_GRANTED);
    expect(await createConnectionQueries(testEnv.db).list()).toEqual([]);
  });

  it('asks for the health scopes, profile and offline, and makes one health connection from the three health scopes, synced in full first', async () => {
    const answer = await signIn(['offline', 'read:recovery', 'read:sleep', 'read:workout', 'read:profile', 'read:cycles']);
    expect(answer.authorize.searchParams.get('scope')?.split(' ').sort()).toEqual(['offline', 'read:profile', 'read:recovery', 'read:sleep', 'read:workout']);
    expect(answer.status).toBe(200);
    const connections = answer.body.connections as Array<{ id: string; sector: string }>;
    expect(connections.map((row) => row.sector)).toEqual(['health']);
    id = connections[0]?.id ?? '';
    await waitFor(async () => ((await connection(id))?.last_synced_at ? true : undefined), 15_000, 'the first sync');
    expect(await read('health.sleep_session')).toHaveLength(10);
    expect(await read('health.workout')).toHaveLength(10);
  });

  it('converts units the way get_schema documents: ms → s, kJ → kcal, percent kept', async () => {
    const [sleep] = await read('health.sleep_session', [{ field: 'score', op: 'is_null', value: false }]);
    // 8 h in bed, 30 min awake, 3.5 h light, 1.5 h deep, 2 h REM (milliseconds at the source).
    expect(sleep).toMatchObject({ in_bed_s: 28_800, awake_s: 1_800, light_s: 12_600, deep_s: 5_400, rem_s: 7_200, asleep_s: 25_200, efficiency_pct: 93.75, score: 91 });
    const [workout] = await read('health.workout');
    expect(workout).toMatchObject({ sport: 'running', duration_s: 2_700, energy_kcal: 500, distance_m: 8046.7, avg_hr: 148, max_hr: 176, strain: 11.4 });
    const samples = await read('health.sample', [{ field: 'metric', op: 'eq', value: 'heart_rate_variability_rmssd' }]);
    expect(samples).toHaveLength(9); // today's recovery is not scored yet
    expect(samples[0]).toMatchObject({ value: 61.5, unit: 'ms', device: 'WHOOP' });
    expect((await read('health.sample', [{ field: 'metric', op: 'eq', value: 'recovery_score' }]))[0]).toMatchObject({ value: 67, unit: '%' });
  });

  it('syncs incrementally from the last sync less the overlap: a late score is taken, a deleted workout is removed', async () => {
    const firstSync = Date.parse((await connection(id))?.last_synced_at ?? '');
    const yesterday = [...whoop.workouts.values()].sort((a, b) => Date.parse(b.start) - Date.parse(a.start))[1];
    whoop.workouts.delete(yesterday?.id ?? '');
    whoop.addDay(0, { scored: true });
    const from = whoop.state.requests.length;
    await syncAndWait(id);
    const starts = whoop.state.requests.slice(from).filter((request) => request.path.startsWith('/developer/v2/')).map((request) => Date.parse(request.query.get('start') ?? ''));
    expect(starts.length).toBeGreaterThan(0);
    for (const start of starts) expect(Math.abs(start - (firstSync - WHOOP_OVERLAP_MS))).toBeLessThan(60_000);
    expect(await read('health.workout')).toHaveLength(9);
    expect((await read('health.workout')).map((row) => row.source_id)).not.toContain(yesterday?.id);
    expect(await read('health.sample', [{ field: 'metric', op: 'eq', value: 'heart_rate_variability_rmssd' }])).toHaveLength(10);
    expect(await read('health.sleep_session')).toHaveLength(10);
  });

  it('stores the rotated refresh token and never presents the old one again', async () => {
    for (let round = 0; round < 2; round += 1) {
      whoop.expireAccessTokens();
      await syncAndWait(id);
      expect((await connection(id))?.status).toBe('active');
    }
    expect(whoop.state.refreshes).toBe(2);
    const presented = whoop.state.presentedRefreshTokens;
    expect(presented).toHaveLength(2);
    expect(new Set(presented).size).toBe(2);
  });

  it('waits out a 429 by X-RateLimit-Reset and stays scheduled', async () => {
    whoop.rateLimitNext('/developer/v2/activity/sleep', 1);
    await syncAndWait(id);
    expect(await connection(id)).toMatchObject({ status: 'active', last_error: null });
  });
});
