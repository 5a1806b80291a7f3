import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { openCredentials, sealCredentials } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { startHomeAssistantDouble, startWhoopDouble, type HomeAssistantDouble, type WhoopDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { insertHubConnection, TEST_KEY } from '../../services/sync-worker/test/helpers.ts';
import { signInThroughConsole } from '../support/console-sign-in.ts';

// The connection check (issue 32): `POST /api/connections/:id/check` and `pcg connections check <id>`
// run the connector's steps against the source (here the doubles of testkit), each passed or failed in
// plain words with its fix, at most 10 requests, one operator audit row, nothing cached. Creating a
// token connection runs the credential step first: a refused credential is a 422 and nothing is saved.
const testEnv = useTestEnvironment();
const PCG = path.resolve(import.meta.dirname, '../../scripts/pcg.ts');
let hub: HomeAssistantDouble;
let whoop: WhoopDouble;
let worker: RunningSyncWorker;
let consoleService: RunningConsole;

type Step = { step: string; title: string; passed: boolean; message: string };
type Check = { ok: boolean; steps: Step[]; requests: number };

async function call(method: string, route: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${consoleService.address}${route}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}
async function check(id: string): Promise<Check> {
  const answer = await call('POST', `/api/connections/${id}/check`);
  expect(answer.status).toBe(200);
  return answer.json as unknown as Check;
}
const stepOf = (result: Check, step: string) => result.steps.find((candidate) => candidate.step === step);
const stepIds = (result: Check) => result.steps.map((step) => step.step);

async function pcg(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const port = new URL(consoleService.address).port;
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PCG, ...args], { env: { PATH: process.env.PATH ?? '', REST_PORT: port }, timeout: 40_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** The check rows queued since the last take; waits for `count` of them, then takes once more to see no other came. */
async function checkRows(count: number): Promise<Array<Record<string, unknown>>> {
  const rows: Array<Record<string, unknown>> = [];
  await waitFor(async () => {
    rows.push(...(await takeQueuedAuditRows(testEnv.redis)).filter((row) => row.tool === 'check_connection'));
    return rows.length >= count ? true : undefined;
  }, 10_000, `${count} check rows`);
  rows.push(...(await takeQueuedAuditRows(testEnv.redis)).filter((row) => row.tool === 'check_connection'));
  return rows.map(({ argsJson, ...row }) => ({ ...row, args: JSON.parse(String(argsJson)) as unknown }));
}

const cachedEntities = (id: string) => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM home_entities WHERE connection_id = ${id}::uuid`);
const connectionCount = () => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM connections`);

/** An address nothing listens on: a port of the double's host that was opened and closed. */
async function closedAddress(): Promise<string> {
  const gone = await startHomeAssistantDouble();
  await gone.close();
  return gone.url;
}

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  whoop = await startWhoopDouble({ days: 3 });
  const env = testEnv.env({ CREDENTIALS_KEY: TEST_KEY.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', WHOOP_BASE_URL: whoop.url });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log);
  expect((await call('PUT', '/api/connect/whoop/app', whoop.client)).status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await whoop?.close();
  await hub?.close();
});

describe('the connection check of a home-automation hub', () => {
  it('passes every step against a hub that accepts the token, in at most 10 requests, writing one operator row and no cached data', async () => {
    // Paused: no sync runs beside the check, so any cached row would be the check's.
    const id = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token }, 'paused');
    await takeQueuedAuditRows(testEnv.redis);
    const before = hub.requests.length;
    const result = await check(id);
    expect(result.ok).toBe(true);
    expect(stepIds(result)).toEqual(['credentials', 'credentials_accepted', 'endpoint:config', 'endpoint:states', 'clock', 'rate_limits']);
    expect(result.steps.every((step) => step.passed && step.title.length > 0 && step.message.length > 0)).toBe(true);
    expect(result.requests).toBeLessThanOrEqual(10);
    expect(hub.requests.length - before).toBe(result.requests);
    expect(await cachedEntities(id)).toBe(0);
    expect(await checkRows(1)).toMatchObject([{ agentId: 'operator', tool: 'check_connection', sector: 'home', decision: 'allow', outcome: 'ok', args: { connectionId: id } }]);
  });

  it('fails the credential step of a hub that refuses the token, naming the fix', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: 'not-the-hub-token' }, 'paused');
    await takeQueuedAuditRows(testEnv.redis);
    const result = await check(id);
    expect(result.ok).toBe(false);
    expect(stepOf(result, 'credentials')?.passed).toBe(true);
    expect(stepOf(result, 'credentials_accepted')).toMatchObject({ passed: false, message: expect.stringContaining('create a new long-lived access token in your Home Assistant profile') });
    expect(await checkRows(1)).toMatchObject([{ agentId: 'operator', tool: 'check_connection', decision: 'allow', outcome: 'error', args: { connectionId: id, failedSteps: expect.arrayContaining(['credentials_accepted']) } }]);
  });

  it('fails the reads of a hub that cannot be reached, saying to check that it runs and is reachable', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: await closedAddress(), token: hub.token }, 'paused');
    const result = await check(id);
    expect(result.ok).toBe(false);
    expect(stepOf(result, 'credentials_accepted')).toMatchObject({ passed: false, message: expect.stringContaining('check that the hub is running and reachable from the gateway') });
    expect(stepOf(result, 'endpoint:states')?.passed).toBe(false);
  });

  it('fails one read the hub refuses while the others pass', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token }, 'paused');
    hub.failNext('/api/config', 500);
    const result = await check(id);
    expect(result.ok).toBe(false);
    expect(stepOf(result, 'credentials_accepted')?.passed).toBe(true);
    expect(stepOf(result, 'endpoint:config')).toMatchObject({ passed: false, message: expect.stringContaining('HTTP 500') });
    expect(stepOf(result, 'endpoint:states')?.passed).toBe(true);
  });

  it('fails the credentials step when the stored credentials cannot be opened with the key', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token }, 'paused');
    await testEnv.db.query(sql.unsafe`UPDATE sign_ins SET credentials = ${sql.binary(Buffer.from('not sealed with this key'))} WHERE id = (SELECT sign_in_id FROM connections WHERE id = ${id}::uuid)`);
    const result = await check(id);
    expect(result).toMatchObject({ ok: false, requests: 0 });
    expect(stepOf(result, 'credentials')).toMatchObject({ passed: false, message: expect.stringContaining('cannot be opened') });
  });

  it('never sends the token to a metadata address stored for a hub: the outbound policy refuses the read', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://169.254.169.254', token: hub.token }, 'paused');
    const result = await check(id);
    expect(result.ok).toBe(false);
    expect(stepOf(result, 'credentials_accepted')).toMatchObject({ passed: false, message: expect.stringContaining('169.254.169.254') });
  });

  it('answers 404 for a connection that does not exist, like the other connection routes', async () => {
    const answer = await call('POST', '/api/connections/00000000-0000-4000-8000-000000000000/check');
    expect(answer.status).toBe(404);
    expect(answer.json.error).toBe('no such connection');
  });
});

describe('the connection check of a push connection', () => {
  it('asks nothing outward and answers its own steps: secret, accepting, last push', async () => {
    const created = await call('POST', '/api/connections', { provider: 'health-auto-export' });
    const id = (created.json.connection as { id: string }).id;
    const fresh = await check(id);
    expect(fresh.requests).toBe(0);
    expect(stepIds(fresh)).toEqual(['secret', 'accepting', 'last_push']);
    expect(stepOf(fresh, 'secret')?.passed).toBe(true);
    expect(stepOf(fresh, 'last_push')).toMatchObject({ passed: false, message: expect.stringContaining(`/api/ingest/${id}`) });

    expect((await call('POST', `/api/connections/${id}/pause`)).status).toBe(200);
    expect(stepOf(await check(id), 'accepting')).toMatchObject({ passed: false, message: expect.stringContaining('resume it') });
  });
});

describe('checked at connect', () => {
  it('refuses a Home Assistant token the hub refuses with 422 naming the fix, and saves nothing', async () => {
    const before = await connectionCount();
    const refused = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: hub.url, token: 'a-wrong-token' } });
    expect(refused.status).toBe(422);
    expect(refused.json.error).toEqual(expect.stringContaining('create a new long-lived access token'));
    expect(await connectionCount()).toBe(before);
  });

  it('refuses a replacement token the hub refuses with 422, and keeps the stored one', async () => {
    const created = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: hub.url, token: hub.token } });
    const id = (created.json.connection as { id: string }).id;
    const refused = await call('PATCH', `/api/connections/${id}`, { credentials: { baseUrl: hub.url, token: 'another-wrong-token' }, displayName: 'Renamed' });
    expect(refused.status).toBe(422);
    expect(refused.json.error).toEqual(expect.stringContaining('create a new long-lived access token'));
    expect((await check(id)).ok).toBe(true);
    expect(((await call('GET', '/api/connections')).json.connections as Array<{ id: string; displayName: string }>).find((connection) => connection.id === id)?.displayName).not.toBe('Renamed');
  });

  it('saves a hub that cannot be reached, with the warning in the answer', async () => {
    const created = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: await closedAddress(), token: hub.token } });
    expect(created.status).toBe(201);
    expect(created.json.warning).toEqual(expect.stringContaining('check that the hub is running and reachable'));
  });

  it('saves a hub that accepts the token without a warning', async () => {
    const created = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: hub.url, token: hub.token } });
    expect(created.status).toBe(201);
    expect(created.json.warning).toBeUndefined();
  });
});

describe('the connection check of the wearable (OAuth)', () => {
  let id = '';
  beforeAll(async () => {
    whoop.state.grantedScopes = ['offline', 'read:recovery', 'read:sleep', 'read:workout', 'read:profile'];
    const signedIn = await signInThroughConsole(consoleService.address, 'whoop');
    id = ((signedIn.body.connections as Array<{ id: string }>)[0] ?? { id: '' }).id;
  });

  it('passes the token, scope and read steps of a full grant', async () => {
    const result = await check(id);
    expect(result.ok).toBe(true);
    expect(stepIds(result)).toEqual(['credentials', 'token', 'scopes', 'endpoint:recovery', 'endpoint:sleep', 'endpoint:workout', 'clock', 'rate_limits']);
    expect(result.requests).toBe(3);
  });

  it('renews an access token that is due through the sign-in refresh before the reads', async () => {
    const signInId = await testEnv.db.oneFirst(sql.type(z.object({ id: z.string() }))`SELECT sign_in_id::text AS id FROM connections WHERE id = ${id}::uuid`);
    const sealed = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`SELECT credentials FROM sign_ins WHERE id = ${signInId}::uuid`);
    const credentials = openCredentials(TEST_KEY, sealed, signInId) as Record<string, unknown>;
    await testEnv.db.query(sql.unsafe`UPDATE sign_ins SET credentials = ${sql.binary(sealCredentials(TEST_KEY, { ...credentials, expiresAt: Date.now() - 1000 }, signInId))} WHERE id = ${signInId}::uuid`);
    const result = await check(id);
    expect(result.ok, JSON.stringify(result)).toBe(true);
    expect(stepOf(result, 'token')?.message).toContain('renewed through the sign-in');
    // The refresh and the three reads.
    expect(result.requests).toBe(4);
  });

  it('renews a refused access token through the sign-in refresh and reads again', async () => {
    whoop.expireAccessTokens();
    const result = await check(id);
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true });
    // The refused read, the refresh, the read again and the two other reads.
    expect(result.requests).toBe(5);
  });

  it('fails the rate-limit step and the read the source rate limited', async () => {
    whoop.rateLimitNext('/developer/v2/activity/sleep', 30);
    const result = await check(id);
    expect(result.ok).toBe(false);
    expect(stepOf(result, 'endpoint:sleep')?.passed).toBe(false);
    expect(stepOf(result, 'rate_limits')).toMatchObject({ passed: false, message: expect.stringContaining('x-ratelimit-remaining: 0') });
  });

  it('names a permission the provider did not grant, with the fix, and does not ask its read', async () => {
    whoop.state.grantedScopes = ['offline', 'read:sleep', 'read:profile'];
    await signInThroughConsole(consoleService.address, 'whoop');
    const before = whoop.state.requests.length;
    const result = await check(id);
    expect(result.ok).toBe(false);
    expect(stepOf(result, 'scopes')).toMatchObject({ passed: false, message: 'WHOOP did not grant read:recovery, read:workout: sign in again and accept the recovery and workout permissions' });
    expect(stepOf(result, 'endpoint:recovery')).toMatchObject({ passed: false, message: expect.stringContaining('not asked') });
    expect(stepOf(result, 'endpoint:sleep')?.passed).toBe(true);
    expect(whoop.state.requests.slice(before).map((request) => request.path)).toEqual(['/developer/v2/activity/sleep']);
  });

  it('fails with the sign-in fix when the grant is gone', async () => {
    whoop.revokeGrant();
    whoop.expireAccessTokens();
    const result = await check(id);
    expect(result.ok).toBe(false);
    expect(stepOf(result, 'endpoint:sleep')).toMatchObject({ passed: false, message: expect.stringContaining('sign in to WHOOP again') });
  });
});

describe('pcg connections check', () => {
  it('prints each step and exits 0 when all passed, 1 naming the failures when one failed', async () => {
    const good = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token }, 'paused');
    const passed = await pcg(['connections', 'check', good]);
    expect(passed.code).toBe(0);
    expect(passed.stdout).toContain('passed  The hub accepts the token');
    expect(passed.stdout).toContain('all steps passed (3 requests to the source)');

    const bad = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: 'refused-token' }, 'paused');
    const failed = await pcg(['connections', 'check', bad, '--json']);
    expect(failed.code).toBe(1);
    const answer = JSON.parse(failed.stdout) as Check;
    expect(stepOf(answer, 'credentials_accepted')?.passed).toBe(false);
    expect(failed.stderr).toContain('failing step');
  });
});
