import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { GOOGLE as GOOGLE_PROVIDER, PROVIDERS } from '@pcg/shared/providers';
import { blockingConnection, openSyncProducer, type SyncJobResult } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { startGoogleDouble, startHomeAssistantDouble, startWhoopDouble, type GoogleDouble, type HomeAssistantDouble, type WhoopDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../../src/config.ts';
import type { ConnectionInfo, TokenRefreshResult } from '../../src/connectors/connector-types.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../src/service.ts';
import { refreshThroughSignIns } from '../../src/sign-ins/refresh-credentials.ts';
import { createTokenRefresher } from '../../src/sign-ins/token-refresh.ts';
import { createOriginRebaser } from '@pcg/shared/providers';
import { connectionState, entityRows, insertHubConnection, insertOAuthConnection, TEST_KEY, workerEnv } from '../helpers.ts';

/**
 * The connector contract: one table of cases that every connector's double runs through. A connector
 * declares, per case, how its double plays it, or why the case does not apply to it (reported as a
 * skipped test with the reason in its title, never as a pass). A new connector adds itself to SUBJECTS.
 */
const CASES = [
  'full sync',
  'incremental sync',
  'deletion at the source',
  '401 → refresh → success',
  'refresh refused → needs sign-in',
  '403 quota → rate limited and still scheduled',
  '429 with Retry-After',
  '5xx and timeouts with backoff',
  'cursor expired → one full resync',
] as const;
type CaseName = (typeof CASES)[number];
type Play = () => Promise<void>;
type Subject = { provider: string; cases: Record<CaseName, Play | { doesNotApply: string }> };

const testEnv = useTestEnvironment();
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
let worker: RunningSyncWorker;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let queue: Queue;
/** Every refresh the worker asked for; each is refused (no provider of today refreshes a token). */
const refreshes: string[] = [];
const refusedRefresh: TokenRefreshResult = { ok: false, reason: 'refused', message: 'invalid_grant' };
const doubles: Array<{ close(): Promise<void> }> = [];
/** One wearable double for the file: the worker's WHOOP_BASE_URL points at it. */
let whoop: WhoopDouble;
/** One Google double for the file: the worker's GOOGLE_BASE_URL points at it. */
let google: GoogleDouble;

beforeAll(async () => {
  whoop = await startWhoopDouble({ days: 5 });
  doubles.push(whoop);
  google = await startGoogleDouble();
  doubles.push(google);
  const log = createCapturingLogger('sync-worker').log;
  // OAuth connectors refresh through the sign-ins' own refresher, against their double.
  const signIns = refreshThroughSignIns(createTokenRefresher({ db: testEnv.db, credentialsKey: TEST_KEY, log, requestTimeoutMs: 2_000, rebaseUrl: createOriginRebaser({ WHOOP_BASE_URL: whoop.url, GOOGLE_BASE_URL: google.url }) }));
  const refreshCredentials = async (connection: ConnectionInfo, current: unknown) => {
    refreshes.push(connection.id);
    return connection.provider === 'whoop' || connection.provider === 'google' ? signIns(connection, current) : refusedRefresh;
  };
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv({ WHOOP_BASE_URL: whoop.url, GOOGLE_BASE_URL: google.url }))), log, { refreshCredentials });
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'contract'), prefix: bullmqPrefix(settings()) });
});
afterAll(async () => {
  await worker?.close();
  await producer?.close();
  await queue?.close();
  await Promise.all(doubles.map((double) => double.close()));
});

async function syncNow(id: string): Promise<Job> {
  const jobId = await producer.requestSync(id);
  await waitFor(
    async () => {
      const state = await queue.getJobState(jobId);
      return state === 'completed' || state === 'failed' ? true : undefined;
    },
    15_000,
    `sync job ${jobId} to finish`,
  );
  const job = await queue.getJob(jobId);
  if (!job) throw new Error(`job ${jobId} vanished`);
  return job;
}
const result = (job: Job) => job.returnvalue as SyncJobResult;
const scheduled = async (id: string) => (await producer.schedules()).some((entry) => entry.connectionId === id);

/** A hub double with a connection that has had its first (full) sync and is scheduled. */
async function syncedHub(): Promise<{ hub: HomeAssistantDouble; id: string }> {
  const hub = await startHomeAssistantDouble();
  doubles.push(hub);
  const id = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
  await producer.schedule(id, 15);
  await waitFor(async () => ((await connectionState(testEnv.db, id)).last_synced_at && (await queue.getActiveCount()) === 0 ? true : undefined), 10_000, 'the first sync');
  return { hub, id };
}

const HOME_ASSISTANT: Subject = {
  provider: 'home-assistant',
  cases: {
    'full sync': async () => {
      const hub = await startHomeAssistantDouble();
      doubles.push(hub);
      const id = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
      const job = await syncNow(id);
      expect(result(job)).toMatchObject({ outcome: 'synced', mode: 'full', written: 9, removed: 0 });
      expect((await entityRows(testEnv.db, id)).length).toBe(9);
    },
    'incremental sync': async () => {
      const { hub, id } = await syncedHub();
      hub.setState('light.kitchen', 'off');
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'incremental', written: 1 });
      expect((await entityRows(testEnv.db, id)).find((row) => row.source_id === 'light.kitchen')?.state).toBe('off');
    },
    'deletion at the source': async () => {
      const { hub, id } = await syncedHub();
      hub.removeEntity('light.kitchen');
      // The hub's REST API signals no deletion: its hourly full sync finds what is gone.
      await testEnv.db.query(sql.unsafe`
        UPDATE connections SET sync_cursor = jsonb_set(sync_cursor, '{fullAt}', to_jsonb((now() - interval '2 hours')::text)) WHERE id = ${id}::uuid`);
      expect(result(await syncNow(id))).toMatchObject({ mode: 'full', removed: 1 });
      expect((await entityRows(testEnv.db, id)).map((row) => row.source_id)).not.toContain('light.kitchen');
    },
    '401 → refresh → success': { doesNotApply: "the hub's long-lived token cannot be refreshed; a 401 needs a new sign-in" },
    'refresh refused → needs sign-in': async () => {
      const { hub, id } = await syncedHub();
      const before = await entityRows(testEnv.db, id);
      const asked = refreshes.length;
      hub.rotateToken();
      const job = await syncNow(id);
      expect(await job.getState()).toBe('failed');
      expect(job.attemptsMade).toBe(1);
      expect(refreshes.length).toBe(asked); // nothing to refresh: the hub's 401 is a sign-in at once
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'needs_sign_in', last_error: 'the hub refused the credentials (HTTP 401); sign in again' });
      expect(await scheduled(id)).toBe(false);
      expect(await entityRows(testEnv.db, id)).toEqual(before);
    },
    '403 quota → rate limited and still scheduled': { doesNotApply: 'the hub has no quota; its 403 means the token may not read, which needs a new sign-in' },
    '429 with Retry-After': async () => {
      const { hub, id } = await syncedHub();
      hub.failNext('/api/history', 429, { retryAfter: '1' });
      const from = hub.requests.length;
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(job.attemptsMade).toBe(1);
      const [limited, retried] = hub.requests.slice(from);
      expect((retried?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(950);
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
      expect(await scheduled(id)).toBe(true);
    },
    '5xx and timeouts with backoff': async () => {
      const { hub, id } = await syncedHub();
      const before = await entityRows(testEnv.db, id);
      hub.failNext('/api/history', 502, { times: 2 });
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(job.attemptsMade).toBe(3);
      const release = hub.hang('/api/history');
      const jobId = await producer.requestSync(id);
      await waitFor(async () => ((await connectionState(testEnv.db, id)).last_error === 'the hub did not answer within 0.5 s; retrying' ? true : undefined), 10_000, 'the timeout to show');
      release();
      await waitFor(async () => ((await (await queue.getJob(jobId))?.getState()) === 'completed' ? true : undefined), 15_000, 'the sync to recover');
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
      expect((await entityRows(testEnv.db, id)).map((row) => row.source_id)).toEqual(before.map((row) => row.source_id));
    },
    'cursor expired → one full resync': { doesNotApply: "the hub's REST API has no cursor the source can expire (a refused history read already falls back to a full sync)" },
  },
};

const PHONE_PUSHES = 'the phone pushes to the Console; the sync-worker never pulls from it';
const HEALTH_AUTO_EXPORT: Subject = {
  provider: 'health-auto-export',
  cases: {
    'full sync': { doesNotApply: PHONE_PUSHES },
    'incremental sync': { doesNotApply: PHONE_PUSHES },
    'deletion at the source': { doesNotApply: 'the phone app never signals a deletion' },
    '401 → refresh → success': { doesNotApply: 'the phone holds a per-connection secret; there is no token to refresh' },
    'refresh refused → needs sign-in': { doesNotApply: 'the phone holds a per-connection secret; there is no token to refresh' },
    '403 quota → rate limited and still scheduled': { doesNotApply: PHONE_PUSHES },
    '429 with Retry-After': { doesNotApply: PHONE_PUSHES },
    '5xx and timeouts with backoff': { doesNotApply: PHONE_PUSHES },
    'cursor expired → one full resync': { doesNotApply: 'the phone has no cursor' },
  },
};

/** A wearable connection that has had its first (full) sync and is scheduled. */
async function syncedWhoop(): Promise<string> {
  const id = await insertOAuthConnection(testEnv.db, { provider: 'whoop', sector: 'health', authorizeUrl: `${whoop.url}/oauth/oauth2/auth`, tokenUrl: `${whoop.url}/oauth/oauth2/token`, client: whoop.client });
  await producer.schedule(id, 60);
  await waitFor(async () => ((await connectionState(testEnv.db, id)).last_synced_at && (await queue.getActiveCount()) === 0 ? true : undefined), 10_000, 'the first sync');
  return id;
}

const WHOOP: Subject = {
  provider: 'whoop',
  cases: {
    'full sync': async () => {
      const id = await insertOAuthConnection(testEnv.db, { provider: 'whoop', sector: 'health', authorizeUrl: `${whoop.url}/oauth/oauth2/auth`, tokenUrl: `${whoop.url}/oauth/oauth2/token`, client: whoop.client });
      // Five nights, five workouts, and four scored recoveries of five metrics each (today's is pending).
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'full', written: 5 + 5 + 4 * 5, removed: 0 });
    },
    'incremental sync': async () => {
      const id = await syncedWhoop();
      whoop.addDay(0, { scored: true });
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'incremental' });
      expect((await connectionState(testEnv.db, id)).status).toBe('active');
    },
    'deletion at the source': async () => {
      const id = await syncedWhoop();
      const [newest] = [...whoop.workouts.values()].sort((a, b) => Date.parse(b.start) - Date.parse(a.start));
      whoop.workouts.delete(newest?.id ?? '');
      expect(result(await syncNow(id))).toMatchObject({ mode: 'incremental', removed: 1 });
      whoop.addDay(0, { scored: true });
    },
    '401 → refresh → success': async () => {
      const id = await syncedWhoop();
      const before = whoop.state.refreshes;
      whoop.expireAccessTokens();
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(whoop.state.refreshes).toBe(before + 1);
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
    },
    'refresh refused → needs sign-in': async () => {
      const id = await syncedWhoop();
      whoop.revokeGrant();
      whoop.expireAccessTokens();
      const job = await syncNow(id);
      expect(await job.getState()).toBe('failed');
      expect((await connectionState(testEnv.db, id)).status).toBe('needs_sign_in');
      expect(await scheduled(id)).toBe(false);
    },
    '403 quota → rate limited and still scheduled': { doesNotApply: 'WHOOP signals its quota with 429 only; a 403 is a scope it was not granted' },
    '429 with Retry-After': async () => {
      const id = await syncedWhoop();
      whoop.rateLimitNext('/developer/v2/activity/workout', 1);
      const from = whoop.state.requests.length;
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(job.attemptsMade).toBe(1);
      const workouts = whoop.state.requests.slice(from).filter((request) => request.path === '/developer/v2/activity/workout');
      expect((workouts[1]?.at ?? 0) - (workouts[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
      expect(await scheduled(id)).toBe(true);
    },
    '5xx and timeouts with backoff': async () => {
      const id = await syncedWhoop();
      whoop.failNext('/developer/v2/recovery', 502, { times: 2 });
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(job.attemptsMade).toBe(3);
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
    },
    'cursor expired → one full resync': { doesNotApply: 'WHOOP reads by time window; there is no cursor the source can expire' },
  },
};

/** A Google calendar connection that has had its first (full) sync and is scheduled. */
async function googleCalendar(): Promise<string> {
  return insertOAuthConnection(testEnv.db, { provider: 'google', sector: 'calendar', authorizeUrl: `${google.url}/o/oauth2/v2/auth`, tokenUrl: `${google.url}/token`, client: google.client, scopes: GOOGLE_PROVIDER.oauth?.scopes });
}
async function syncedGoogle(): Promise<string> {
  const id = await googleCalendar();
  await producer.schedule(id, 60);
  await waitFor(async () => ((await connectionState(testEnv.db, id)).last_synced_at && (await queue.getActiveCount()) === 0 ? true : undefined), 10_000, 'the first sync');
  return id;
}

const GOOGLE: Subject = {
  provider: 'google',
  cases: {
    'full sync': async () => {
      const id = await googleCalendar();
      // Two selected calendars: six weekly occurrences, a timed and an all-day event, a birthday (the old event and the unticked calendar are not kept).
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'full', written: 6 + 2 + 1, removed: 0 });
    },
    'incremental sync': async () => {
      const id = await syncedGoogle();
      const from = google.state.requests.length;
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'incremental', written: 0, removed: 0 });
      expect(google.state.requests.slice(from).filter((call) => call.path.endsWith('/events')).every((call) => call.query.has('syncToken'))).toBe(true);
    },
    'deletion at the source': async () => {
      const id = await syncedGoogle();
      google.calendar.add({ id: `gone${Date.now()}`, calendarId: 'primary-calendar@example.com', summary: 'Soon gone', start: { date: '2099-01-01' }, end: { date: '2099-01-02' } });
      const added = [...google.calendar.events.values()].at(-1);
      google.calendar.add({ id: `kept${Date.now()}`, calendarId: 'primary-calendar@example.com', summary: 'Tomorrow', start: { dateTime: new Date(Date.now() + 86_400_000).toISOString(), timeZone: 'UTC' }, end: { dateTime: new Date(Date.now() + 90_000_000).toISOString(), timeZone: 'UTC' } });
      expect(result(await syncNow(id))).toMatchObject({ mode: 'incremental', written: 1 });
      google.calendar.cancel([...google.calendar.events.values()].at(-1)?.id ?? '');
      google.calendar.cancel(added?.id ?? '');
      expect(result(await syncNow(id))).toMatchObject({ mode: 'incremental', removed: 1 });
    },
    '401 → refresh → success': async () => {
      const id = await syncedGoogle();
      const before = google.state.refreshes;
      google.expireAccessTokens();
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(google.state.refreshes).toBe(before + 1);
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
    },
    'refresh refused → needs sign-in': async () => {
      const id = await syncedGoogle();
      google.revokeGrant();
      google.expireAccessTokens();
      const job = await syncNow(id);
      expect(await job.getState()).toBe('failed');
      expect((await connectionState(testEnv.db, id)).status).toBe('needs_sign_in');
      expect(await scheduled(id)).toBe(false);
    },
    '403 quota → rate limited and still scheduled': async () => {
      const id = await syncedGoogle();
      google.failNext('/calendar/v3/calendars/', 403, { reason: 'userRateLimitExceeded', headers: { 'retry-after': '1' } });
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
      expect(await scheduled(id)).toBe(true);
    },
    '429 with Retry-After': async () => {
      const id = await syncedGoogle();
      google.failNext('/calendar/v3/users/me/calendarList', 429, { reason: 'rateLimitExceeded', headers: { 'retry-after': '1' } });
      const from = google.state.requests.length;
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      const lists = google.state.requests.slice(from).filter((call) => call.path === '/calendar/v3/users/me/calendarList');
      expect((lists[1]?.at ?? 0) - (lists[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
      expect(await scheduled(id)).toBe(true);
    },
    '5xx and timeouts with backoff': async () => {
      const id = await syncedGoogle();
      google.failNext('/calendar/v3/calendars/', 503, { times: 2 });
      const job = await syncNow(id);
      expect(await job.getState()).toBe('completed');
      expect(job.attemptsMade).toBe(3);
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
    },
    'cursor expired → one full resync': async () => {
      const id = await syncedGoogle();
      google.calendar.expireSyncTokens();
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'full', removed: 0 });
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'incremental' });
    },
  },
};

const SUBJECTS: readonly Subject[] = [HOME_ASSISTANT, HEALTH_AUTO_EXPORT, WHOOP, GOOGLE];

it('every provider runs the contract', () => {
  expect(SUBJECTS.map((subject) => subject.provider).sort()).toEqual(PROVIDERS.map((provider) => provider.kind).sort());
});

for (const subject of SUBJECTS) {
  describe(`connector contract: ${subject.provider}`, () => {
    for (const name of CASES) {
      const play = subject.cases[name];
      if (typeof play === 'function') it(name, play);
      else it.skip(`${name} — does not apply: ${play.doesNotApply}`, () => undefined);
    }
  });
}
