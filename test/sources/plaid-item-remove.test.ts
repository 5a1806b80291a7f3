import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { createOriginRebaser } from '@pcg/shared/providers';
import { blockingConnection } from '@pcg/shared/queues';
import { bullmqPrefix, createRedis, type Redis } from '@pcg/shared/redis';
import { startPlaidDouble, startSimplefinDouble, type PlaidDouble, type SimplefinDouble } from '@pcg/testkit/doubles';
import { consoleSender, createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { plaidAppLoader } from '../../services/sync-worker/src/connectors/plaid/plaid-app.ts';
import { defaultConnectors } from '../../services/sync-worker/src/connectors/registry.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// Deleting the bank aggregator's connection in the Console removes its item at the aggregator
// (`/item/remove`, reference §1.1: the access token is revoked, the item no longer billed): the Console
// hands the removal to the sync-worker, which retries an aggregator that is down and, at the end, logs.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
let aggregator: PlaidDouble;
let bridge: SimplefinDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let signinQueue: Queue;
/** Reads the signin queue's event stream (BullMQ's keys carry their prefix: no keyPrefix here). */
let streamReader: Redis;
const workerLog = createCapturingLogger('sync-worker');
const consoleLog = createCapturingLogger('console');
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
const BACKOFF_MS = 100;

const send = consoleSender(() => consoleService.address);

/** Calls the aggregator as its own client would, with the application's credentials. */
async function askAggregator(path: string, accessToken: string) {
  const answer = await fetch(`${aggregator.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'PLAID-CLIENT-ID': aggregator.app.clientId, 'PLAID-SECRET': aggregator.app.secret },
    body: JSON.stringify({ access_token: accessToken }),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

/** Links one bank through the Console's hosted link and waits for its first sync; answers its connection and item. */
async function linkBank(): Promise<{ connectionId: string; signInId: string; itemId: string; accessToken: string }> {
  const known = new Set(aggregator.items().map((item) => item.itemId));
  const started = await send('GET', '/api/connect/plaid/start');
  expect(started.status, JSON.stringify(started.body)).toBe(302);
  const hosted = new URL(started.headers.get('location') ?? '');
  const cookie = (started.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const completed = await aggregator.completeLink(decodeURIComponent(hosted.pathname.split('/').at(-1) ?? ''));
  const back = new URL(completed.redirect ?? '');
  const linked = await send('GET', `${back.pathname}${back.search}`, undefined, { cookie });
  expect(linked.status, JSON.stringify(linked.body)).toBe(200);
  const connectionId = (linked.body.connections as Array<{ id: string }>)[0]?.id ?? '';
  const item = aggregator.items().find((candidate) => !known.has(candidate.itemId));
  if (!item) throw new Error('no new item at the aggregator');
  await waitFor(() => syncedOnce(connectionId), 20_000, 'the first sync');
  return { connectionId, signInId: String(linked.body.signInId), ...item };
}
const syncedOnce = async (id: string) =>
  (await testEnv.db.maybeOneFirst(sql.type(z.object({ last_synced_at: z.string().nullable() }))`SELECT last_synced_at::text FROM connections WHERE id = ${id}::uuid`)) ? true : undefined;
const signInExists = async (id: string) => (await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM sign_ins WHERE id = ${id}::uuid`)) > 0;
const removalCalls = (accessToken: string) => aggregator.requests.filter((request) => request.path === '/item/remove' && request.accessToken === accessToken);
const removalJobs = async () => (await signinQueue.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter((job) => job.name === 'item_remove');
const allLogs = () => [...workerLog.lines(), ...consoleLog.lines()].join('\n');

/** The newest entry of the signin queue's event stream: a later `addedSince` reads what came after it. */
async function eventsHead(): Promise<string> {
  const [newest] = await streamReader.xrevrange(signinQueue.toKey('events'), '+', '-', 'COUNT', 1);
  return newest?.[0] ?? '0-0';
}
/**
 * The names of the jobs added to the signin queue after `head`, from the queue's own event stream. BullMQ
 * writes a job and its `added` event in one script, and the Console awaits the add before it answers the
 * DELETE: once the DELETE has answered, a job it queued is already in this list.
 */
async function addedSince(head: string): Promise<string[]> {
  const entries = await streamReader.xrange(signinQueue.toKey('events'), `(${head}`, '+');
  return entries.flatMap(([, fields]: [string, string[]]) => {
    const event = new Map<string, string>();
    for (let at = 0; at + 1 < fields.length; at += 2) event.set(fields[at] ?? '', fields[at + 1] ?? '');
    return event.get('event') === 'added' ? [event.get('name') ?? ''] : [];
  });
}

beforeAll(async () => {
  aggregator = await startPlaidDouble();
  bridge = await startSimplefinDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: String(BACKOFF_MS), SIMPLEFIN_ALLOW_LOOPBACK: 'true', PLAID_BASE_URL: aggregator.url });
  const config = loadConfig(syncWorkerConfigSchema, env);
  const connectors = defaultConnectors(createOriginRebaser(config), { plaid: { loadApp: plaidAppLoader(testEnv.db, key) } });
  worker = await startSyncWorker(config, workerLog.log, { connectors });
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), consoleLog.log, { audit: { record: () => undefined } });
  signinQueue = new Queue('signin', { connection: blockingConnection(settings(), 'item-remove-test'), prefix: bullmqPrefix(settings()) });
  streamReader = createRedis(settings(), 'bullmq', 'item-remove-test-events');
  expect((await send('PUT', '/api/connect/plaid/app', { clientId: aggregator.app.clientId, clientSecret: aggregator.app.secret, environment: 'sandbox' })).status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await signinQueue?.close();
  streamReader?.disconnect();
  await aggregator?.close();
  await bridge?.close();
});

describe("deleting the aggregator's connection", () => {
  it('removes the item at the aggregator, whose access token is then refused there', async () => {
    const bank = await linkBank();
    expect((await askAggregator('/accounts/get', bank.accessToken)).status).toBe(200);
    const head = await eventsHead();
    expect((await send('DELETE', `/api/connections/${bank.connectionId}`)).status).toBe(204);
    // Queued before the DELETE answered: what the other provider's deletion below relies on.
    expect(await addedSince(head)).toEqual(['item_remove']);
    expect(await signInExists(bank.signInId)).toBe(false);
    await waitFor(() => (aggregator.removedItems().some((item) => item.itemId === bank.itemId) ? true : undefined), 10_000, 'the item removal');
    expect(removalCalls(bank.accessToken).map((request) => [request.status, request.credentialsIn])).toEqual([[200, 'headers']]);
    for (const path of ['/accounts/get', '/item/get', '/transactions/sync', '/item/remove']) {
      expect(await askAggregator(path, bank.accessToken)).toMatchObject({ status: 400, body: { error_code: 'ITEM_NOT_FOUND' } });
    }
    expect(aggregator.items().map((item) => item.itemId)).not.toContain(bank.itemId);
    // The job held sealed credentials: it is gone once done.
    await waitFor(async () => ((await removalJobs()).length === 0 ? true : undefined), 5_000, 'the finished job to go');
    expect(workerLog.lines().join('\n')).toContain('item removed at the aggregator');
  });

  it('is not held back by an aggregator that is down: the removal is retried with backoff until it answers', async () => {
    const bank = await linkBank();
    aggregator.failNext(bank.itemId, 503, { times: 4 });
    const began = Date.now();
    const deleted = await send('DELETE', `/api/connections/${bank.connectionId}`);
    const tookMs = Date.now() - began;
    expect(deleted.status).toBe(204);
    // The deletion is done while the aggregator has not yet taken the removal.
    expect(await signInExists(bank.signInId)).toBe(false);
    expect(aggregator.removedItems().some((item) => item.itemId === bank.itemId)).toBe(false);
    expect(tookMs).toBeLessThan(1_000);
    // Between two attempts the job waits in Redis with the credentials sealed, never in the clear.
    const [waiting] = await waitFor(async () => {
      const jobs = await removalJobs();
      return jobs.length > 0 ? jobs : undefined;
    }, 5_000, 'the removal job');
    expect(JSON.stringify(waiting?.data)).not.toContain(bank.accessToken);
    expect(waiting?.data).toMatchObject({ provider: 'plaid', signInId: bank.signInId, sealedCredentials: expect.any(String) });
    await waitFor(() => (aggregator.removedItems().some((item) => item.itemId === bank.itemId) ? true : undefined), 15_000, 'the item removal after the outage');
    const calls = removalCalls(bank.accessToken);
    expect(calls.map((request) => request.status)).toEqual([503, 503, 503, 503, 200]);
    const gaps = calls.slice(1).map((request, index) => request.at - (calls[index]?.at ?? 0));
    // Exponential from the base (with ±20 % jitter): each wait longer than the one before it.
    expect(gaps[0]).toBeGreaterThanOrEqual(BACKOFF_MS * 0.8 - 10);
    expect(gaps[3]).toBeGreaterThan(gaps[0] ?? 0);
    expect((await askAggregator('/accounts/get', bank.accessToken)).body.error_code).toBe('ITEM_NOT_FOUND');
  });

  it('gives up after its last attempt and logs the item id for the operator, the item still active there', async () => {
    const bank = await linkBank();
    aggregator.failNext(bank.itemId, 500, { times: 5 });
    expect((await send('DELETE', `/api/connections/${bank.connectionId}`)).status).toBe(204);
    const line = await waitFor(() => workerLog.lines().find((entry) => entry.includes('could not be removed at the aggregator') && entry.includes(bank.itemId)), 15_000, 'the final log line');
    expect(JSON.parse(line)).toMatchObject({ level: 50, itemId: bank.itemId, attempts: 5 });
    expect(removalCalls(bank.accessToken).map((request) => request.status)).toEqual([500, 500, 500, 500, 500]);
    expect((await askAggregator('/accounts/get', bank.accessToken)).status).toBe(200);
    await waitFor(async () => ((await removalJobs()).length === 0 ? true : undefined), 5_000, 'the failed job to go');
  });

  it('counts an item the aggregator no longer knows as removed, without retrying', async () => {
    const bank = await linkBank();
    expect((await askAggregator('/item/remove', bank.accessToken)).status).toBe(200);
    expect((await send('DELETE', `/api/connections/${bank.connectionId}`)).status).toBe(204);
    await waitFor(() => (workerLog.lines().some((entry) => entry.includes('item already gone at the aggregator') && entry.includes(bank.itemId)) ? true : undefined), 10_000, 'the removal');
    expect(removalCalls(bank.accessToken).map((request) => request.status)).toEqual([200, 400]);
  });

  it('sends nothing when a connection of another provider is deleted', async () => {
    const claimed = await send('POST', '/api/connect/simplefin/claim', { setupToken: bridge.issueSetupToken(), confirmHost: new URL(bridge.url).host });
    expect(claimed.status).toBe(200);
    const bridgeId = (claimed.body.connections as Array<{ id: string }>)[0]?.id ?? '';
    await waitFor(() => syncedOnce(bridgeId), 20_000, 'the bridge sync');
    const removalsBefore = aggregator.requests.filter((request) => request.path === '/item/remove').length;
    const head = await eventsHead();
    expect((await send('DELETE', `/api/connections/${bridgeId}`)).status).toBe(204);
    // The Console has decided by the time it answers; a removal it queued would be in the stream now.
    expect(await addedSince(head)).toEqual([]);
    expect(aggregator.requests.filter((request) => request.path === '/item/remove')).toHaveLength(removalsBefore);
  });

  it('never writes an access token or the application secret in a log line', () => {
    const lines = allLogs();
    const tokens = [...aggregator.items(), ...aggregator.removedItems()].map((item) => item.accessToken);
    expect(tokens.length).toBeGreaterThanOrEqual(4);
    for (const token of tokens) expect(lines).not.toContain(token);
    expect(lines).not.toContain(aggregator.app.secret);
    expect(lines).not.toMatch(/access-sandbox-/);
  });
});
