import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { startGoogleDouble, startGraphDouble, startPlaidDouble, startSimplefinDouble, type GoogleDouble, type GraphDouble, type PlaidDouble, type SimplefinDouble } from '@pcg/testkit/doubles';
import { createConnectionQueries } from '@pcg/shared/connections';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { TEST_KEY } from '../../services/sync-worker/test/helpers.ts';
import { signInThroughConsole } from '../support/console-sign-in.ts';

// The connection check (issue 32) of every pulled provider kind besides the hub and the wearable
// (connection-check.test.ts): Microsoft Graph, Google Calendar and People, Gmail, the bank aggregator and
// the bank-link bridge, each against its double of testkit, through the Console's route.
const testEnv = useTestEnvironment();
const MS_CLIENT = { clientId: 'check-ms-client', clientSecret: 'check-ms-secret' };
let graph: GraphDouble;
let google: GoogleDouble;
let aggregator: PlaidDouble;
let bridge: SimplefinDouble;
let worker: RunningSyncWorker;
let consoleService: RunningConsole;

type Step = { step: string; title: string; passed: boolean; message: string };
type Check = { ok: boolean; steps: Step[]; requests: number };

async function send(method: string, route: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${consoleService.address}${route}`, {
    method,
    redirect: 'manual',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    // A redirect or a page: the test reads the headers.
  }
  return { status: response.status, headers: response.headers, body: json };
}
async function check(id: string): Promise<Check> {
  const answer = await send('POST', `/api/connections/${id}/check`);
  expect(answer.status).toBe(200);
  return answer.body as unknown as Check;
}
const stepOf = (result: Check, step: string) => result.steps.find((candidate) => candidate.step === step);
/** The first sync, which a new connection starts at once, has ended: the source's request log is the check's from here. */
const firstSyncDone = (id: string) => waitFor(async () => ((await createConnectionQueries(testEnv.db).get(id))?.last_synced_at ? true : undefined), 15_000, 'the first sync');
const connectionCount = () => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM connections`);
const connectionIn = (body: Record<string, unknown>, sector: string) => (body.connections as Array<{ id: string; sector: string }>).find((connection) => connection.sector === sector)?.id ?? '';

async function microsoftSignIn(consent: string[] | undefined) {
  graph.identity.state.consent = consent;
  const start = await fetch(`${consoleService.address}/api/connect/microsoft/start`, { redirect: 'manual' });
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const consentAnswer = await fetch(start.headers.get('location') ?? '', { redirect: 'manual' });
  const answer = await fetch(consentAnswer.headers.get('location') ?? '', { headers: { cookie } });
  return (await answer.json()) as Record<string, unknown>;
}

/** A hosted link as the operator makes it (the double's test endpoint stands in for the browser at the aggregator). */
async function linkThroughConsole() {
  const started = await send('GET', '/api/connect/plaid/start');
  const hosted = new URL(started.headers.get('location') ?? '');
  const cookie = (started.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const linkToken = decodeURIComponent(hosted.pathname.split('/').at(-1) ?? '');
  const completed = (await (await fetch(`${aggregator.url}/test/link/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link_token: linkToken }) })).json()) as { redirect: string };
  const back = new URL(completed.redirect);
  return send('GET', `${back.pathname}${back.search}`, undefined, { cookie });
}

beforeAll(async () => {
  [graph, google, aggregator, bridge] = await Promise.all([startGraphDouble(MS_CLIENT), startGoogleDouble(), startPlaidDouble(), startSimplefinDouble()]);
  const env = testEnv.env({
    CREDENTIALS_KEY: TEST_KEY.toString('base64'),
    REST_PORT: '0',
    SOURCE_TIMEOUT_MS: '2000',
    SYNC_BACKOFF_MS: '100',
    SIMPLEFIN_ALLOW_LOOPBACK: 'true',
    GOOGLE_BASE_URL: google.url,
    PLAID_BASE_URL: aggregator.url,
    ...graph.env,
  });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  for (const [kind, app] of [['microsoft', MS_CLIENT], ['google', google.client], ['gmail', google.client], ['plaid', { clientId: aggregator.app.clientId, clientSecret: aggregator.app.secret, environment: 'sandbox' }]] as const) {
    expect((await send('PUT', `/api/connect/${kind}/app`, app)).status).toBe(204);
  }
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await Promise.all([graph?.close(), google?.close(), aggregator?.close(), bridge?.close()]);
});

describe('the connection check of the Microsoft-style provider', () => {
  it('reads each sector once, and names a permission a later consent dropped with its fix', async () => {
    const signedIn = await microsoftSignIn(undefined);
    const calendar = connectionIn(signedIn, 'calendar');
    for (const sector of ['calendar', 'contacts', 'mail']) {
      const result = await check(connectionIn(signedIn, sector));
      expect(result.ok, JSON.stringify(result)).toBe(true);
      expect(stepOf(result, `endpoint:${sector}`)?.passed).toBe(true);
      expect(result.requests).toBe(1);
    }
    await microsoftSignIn(['Mail.Read', 'Contacts.Read', 'offline_access', 'openid', 'profile']);
    const narrowed = await check(calendar);
    expect(narrowed.ok).toBe(false);
    expect(stepOf(narrowed, 'scopes')).toMatchObject({ passed: false, message: 'Microsoft did not grant Calendars.Read: sign in again and accept the calendar permission' });
    expect(stepOf(narrowed, 'endpoint:calendar')).toMatchObject({ passed: false, message: expect.stringContaining('not asked') });
    expect(narrowed.requests).toBe(0);
  });
});

describe('the connection check of the Google-style provider and of Gmail', () => {
  it('reads the calendar list and the contacts, each once', async () => {
    const signedIn = await signInThroughConsole(consoleService.address, 'google');
    for (const sector of ['calendar', 'contacts']) {
      const result = await check(connectionIn(signedIn.body, sector));
      expect(result.ok, JSON.stringify(result)).toBe(true);
      expect(result.requests).toBe(1);
    }
  });

  it('reads the mailbox profile, and fails that read with the sign-in fix when Gmail refuses it', async () => {
    const signedIn = await signInThroughConsole(consoleService.address, 'gmail');
    const id = connectionIn(signedIn.body, 'mail');
    const result = await check(id);
    expect(result.ok, JSON.stringify(result)).toBe(true);
    expect(stepOf(result, 'endpoint:mail')?.passed).toBe(true);

    // Reference §5.5: a 403 `insufficientPermissions` is a refusal no retry mends.
    google.failNext('/gmail/v1/users/me/profile', 403, { reason: 'insufficientPermissions' });
    const refused = await check(id);
    expect(refused.ok).toBe(false);
    expect(stepOf(refused, 'endpoint:mail')).toMatchObject({ passed: false, message: expect.stringContaining('sign in to Gmail again from the Console') });
  });
});

describe('the connection check of the bank aggregator', () => {
  it('reads the item and the accounts and never the billed balance endpoint', async () => {
    const linked = await linkThroughConsole();
    const id = connectionIn(linked.body, 'finance');
    await firstSyncDone(id);
    const before = aggregator.requests.length;
    const result = await check(id);
    expect(result.ok, JSON.stringify(result)).toBe(true);
    expect(result.steps.map((step) => step.step)).toEqual(['credentials', 'credentials_accepted', 'endpoint:accounts', 'clock', 'rate_limits']);
    const paths = aggregator.requests.slice(before).map((request) => request.path);
    expect(paths).toEqual(['/item/get', '/accounts/get']);
    expect(paths).not.toContain('/accounts/balance/get');
  });
});

describe('the connection check of the bank-link bridge', () => {
  it('asks the bridge once, balances only, and fails with the fix once the access is revoked', async () => {
    const token = bridge.issueSetupToken();
    const claimed = await send('POST', '/api/connect/simplefin/claim', { setupToken: token, confirmHost: new URL(bridge.url).host });
    expect(claimed.status).toBe(200);
    const id = connectionIn(claimed.body, 'finance');
    await firstSyncDone(id);
    const before = bridge.requests.length;
    const result = await check(id);
    expect(result.ok, JSON.stringify(result)).toBe(true);
    expect(result.requests).toBe(1);
    const asked = bridge.requests.slice(before);
    expect(asked.map((request) => request.path)).toEqual(['/simplefin/accounts']);
    expect(asked[0]?.query.get('balances-only')).toBe('1');

    bridge.revokeAccess();
    const revoked = await check(id);
    expect(revoked.ok).toBe(false);
    expect(stepOf(revoked, 'credentials_accepted')).toMatchObject({ passed: false, message: expect.stringContaining('create a new setup token at the bridge and claim it') });
  });

  it('refuses at claim, with 422 naming the fix and nothing saved, an access the bridge refuses at once', async () => {
    const before = await connectionCount();
    bridge.failNext(403);
    const refused = await send('POST', '/api/connect/simplefin/claim', { setupToken: bridge.issueSetupToken(), confirmHost: new URL(bridge.url).host });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toEqual(expect.stringContaining('create a new setup token at the bridge and claim it'));
    expect(await connectionCount()).toBe(before);
  });

  it('saves, with the warning in the answer, an access the bridge could not be asked with', async () => {
    bridge.failNext(503);
    const claimed = await send('POST', '/api/connect/simplefin/claim', { setupToken: bridge.issueSetupToken(), confirmHost: new URL(bridge.url).host });
    expect(claimed.status).toBe(200);
    expect(claimed.body).toMatchObject({ status: 'signed_in', warning: expect.stringContaining('saved, but not checked: the bridge answered HTTP 503') });
  });
});
