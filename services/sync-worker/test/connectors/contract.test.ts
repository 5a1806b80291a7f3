import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { sealCredentials } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { PROVIDERS } from '@pcg/shared/providers';
import { blockingConnection, openSyncProducer, type SyncJobResult } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createDavSeeder, createLoopbackFetch, radicaleMissing, startHomeAssistantDouble, startRadicale, type HomeAssistantDouble, type LocalServer } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../../src/config.ts';
import type { ConnectionInfo, TokenRefreshResult } from '../../src/connectors/connector-types.ts';
import { healthAutoExportConnector } from '../../src/connectors/health-auto-export/health-auto-export-connector.ts';
import { homeAssistantConnector } from '../../src/connectors/home-assistant/home-assistant-connector.ts';
import { createICloudConnector } from '../../src/connectors/icloud/icloud-connector.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../src/service.ts';
import { connectionState, entityRows, insertHubConnection, TEST_KEY, workerEnv } from '../helpers.ts';
import { ACCOUNT, icloudCertificates, insertICloudSignIn, setCursor } from '../icloud/icloud-setup.ts';

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
const ICLOUD_BOOK = `/${ACCOUNT.appleId}/contacts/`;
let icloud: { radicale: LocalServer; seed: ReturnType<typeof createDavSeeder>; connector: ReturnType<typeof createICloudConnector> } | undefined;

beforeAll(async () => {
  const refreshCredentials = async (connection: ConnectionInfo) => {
    refreshes.push(connection.id);
    return refusedRefresh;
  };
  // iCloud plays against a real CardDAV server (Radicale) when it is installed (CI installs it).
  if (radicaleMissing() === undefined) {
    const certs = icloudCertificates();
    const radicale = await startRadicale(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    const transport = createLoopbackFetch(certs.ca);
    const base = `https://contacts.icloud.com:${radicale.port}/`;
    icloud = { radicale, seed: createDavSeeder({ base, fetch: transport.fetch, user: ACCOUNT.appleId, password: ACCOUNT.appPassword }), connector: createICloudConnector({ carddavUrl: base, transport: transport.fetch }) };
    await icloud.seed.addressBook(ICLOUD_BOOK, 'Contacts');
    doubles.push({ close: async () => (await transport.close(), await radicale.stop(), certs.dispose()) });
  }
  const connectors = [homeAssistantConnector, healthAutoExportConnector, ...(icloud ? [icloud.connector] : [])];
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv())), createCapturingLogger('sync-worker').log, { refreshCredentials, connectors });
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

const vcard = (uid: string, name: string) => ['BEGIN:VCARD', 'VERSION:3.0', `FN:${name}`, `N:${name};;;;`, `UID:${uid}`, 'END:VCARD', ''].join('\r\n');
const contactNames = async (id: string) =>
  (await testEnv.db.anyFirst(sql.unsafe`SELECT display_name FROM contacts_entries WHERE connection_id = ${id}::uuid ORDER BY display_name`)) as string[];
/** The iCloud contacts connection after its first sync of one address book holding `cards`. */
async function syncedICloud(cards: Record<string, string>): Promise<string> {
  if (!icloud) throw new Error(radicaleMissing());
  for (const [file, name] of Object.entries(cards)) await icloud.seed.putVCard(`${ICLOUD_BOOK}${file}`, vcard(file, name));
  const { contacts } = await insertICloudSignIn(testEnv.db);
  expect(result(await syncNow(contacts))).toMatchObject({ outcome: 'synced', mode: 'full' });
  return contacts;
}
const RADICALE_ONLY = 'not played: the real CardDAV server (Radicale) cannot be made to answer it, and no double stands in for iCloud';
const ICLOUD: Subject = {
  provider: 'icloud',
  cases: {
    'full sync': async () => {
      const id = await syncedICloud({ 'c-full-1.vcf': 'Full One', 'c-full-2.vcf': 'Full Two' });
      expect(await contactNames(id)).toEqual(expect.arrayContaining(['Full One', 'Full Two']));
    },
    'incremental sync': async () => {
      const id = await syncedICloud({ 'c-inc-1.vcf': 'Inc One' });
      await icloud?.seed.putVCard(`${ICLOUD_BOOK}c-inc-2.vcf`, vcard('c-inc-2', 'Inc Two'));
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'incremental', written: 1 });
      expect(await contactNames(id)).toContain('Inc Two');
    },
    'deletion at the source': async () => {
      const id = await syncedICloud({ 'c-del.vcf': 'Del One' });
      await icloud?.seed.remove(`${ICLOUD_BOOK}c-del.vcf`);
      expect(result(await syncNow(id))).toMatchObject({ outcome: 'synced', mode: 'incremental' });
      expect(await contactNames(id)).not.toContain('Del One');
    },
    '401 → refresh → success': { doesNotApply: 'an app-specific password cannot be refreshed; a 401 needs a new one' },
    'refresh refused → needs sign-in': async () => {
      const id = await syncedICloud({});
      const asked = refreshes.length;
      const signInId = String(await testEnv.db.oneFirst(sql.unsafe`SELECT sign_in_id FROM connections WHERE id = ${id}::uuid`));
      // Another app-specific password than the server's: what a revoked one looks like.
      await createSignInQueries(testEnv.db).replaceCredentials(signInId, sealCredentials(TEST_KEY, { ...ACCOUNT, appPassword: 'zzzz-zzzz-zzzz-zzzz' }, signInId));
      const job = await syncNow(id);
      expect(await job.getState()).toBe('failed');
      expect(refreshes.length).toBe(asked);
      expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'needs_sign_in' });
    },
    '403 quota → rate limited and still scheduled': { doesNotApply: 'iCloud documents no quota answer; its 403 means the password may not read' },
    '429 with Retry-After': { doesNotApply: RADICALE_ONLY },
    '5xx and timeouts with backoff': { doesNotApply: RADICALE_ONLY },
    'cursor expired → one full resync': async () => {
      const id = await syncedICloud({ 'c-exp.vcf': 'Exp One' });
      const { sync_cursor: cursor } = await connectionState(testEnv.db, id);
      const stale = structuredClone(cursor) as { collections: Record<string, { token: string | null }> };
      for (const state of Object.values(stale.collections)) state.token = 'http://radicale.org/ns/sync/unknown';
      await setCursor(testEnv.db, id, stale);
      const job = await syncNow(id);
      expect(job.attemptsMade).toBe(1);
      expect(result(job)).toMatchObject({ outcome: 'synced', mode: 'full' });
      const names = await contactNames(id);
      expect(names.filter((name) => name === 'Exp One')).toHaveLength(1);
    },
  },
};

const SUBJECTS: readonly Subject[] = [HOME_ASSISTANT, HEALTH_AUTO_EXPORT, ICLOUD];

it('every provider runs the contract', () => {
  expect(SUBJECTS.map((subject) => subject.provider).sort()).toEqual(PROVIDERS.map((provider) => provider.kind).sort());
});

for (const subject of SUBJECTS) {
  describe(`connector contract: ${subject.provider}`, () => {
    for (const name of CASES) {
      const play = subject.cases[name];
      if (typeof play === 'function') it.skipIf(subject.provider === 'icloud' && radicaleMissing() !== undefined)(name, play);
      else it.skip(`${name} — does not apply: ${play.doesNotApply}`, () => undefined);
    }
  });
}
