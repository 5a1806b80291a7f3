import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { registerExtraProvider } from '@pcg/shared/providers';
import { createSignInQueries, NO_SECTORS_GRANTED } from '@pcg/shared/sign-ins';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { SIGN_IN_STATE_REFUSED } from '../../services/console/src/sign-ins/sign-in-service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { CONNECTORS } from '../../services/sync-worker/src/connectors/registry.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { DOUBLE_SECRET_PREFIX, startOAuthProviderDouble, type OAuthProviderDouble, type TokenFailure } from '../support/oauth-provider-double.ts';
import { oauthTestConnector, oauthTestProvider, TEST_OAUTH_SCOPES } from '../support/oauth-test-provider.ts';

// The oauth sign-in end to end (issue 14, done when): the Console's routes, the sync-worker's code
// exchange and token refresh, against a test provider that ships in no service.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const CLIENT = { clientId: 'SENTINEL-client-id', clientSecret: 'SENTINEL-client-secret' };
const SCOPES = TEST_OAUTH_SCOPES;

let double: OAuthProviderDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
const consoleLog = createCapturingLogger('console');
const workerLog = createCapturingLogger('sync-worker');
const audit: AuditEvent[] = [];

/** What Chromium sends when it follows a link or a redirect. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

type SignInAnswer = { status: number; body: Record<string, unknown>; callback: string; cookie: string };

/** A browser's sign-in: start at the Console, consent at the provider (granting `granted`), back to the callback. */
async function signIn(granted: string[], query = ''): Promise<SignInAnswer> {
  double.state.grantedScopes = granted;
  const start = await fetch(`${consoleService.address}/api/connect/test-oauth/start${query}`, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  expect(start.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Lax/);
  const consent = await fetch(start.headers.get('location') ?? '', { redirect: 'manual' });
  const callback = consent.headers.get('location') ?? '';
  const answer = await fetch(callback, { headers: { cookie } });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown>, callback, cookie };
}

const connectionsOfSignIn = (signInId: string) => createConnectionQueries(testEnv.db).ofSignIn(signInId);

beforeAll(async () => {
  double = await startOAuthProviderDouble(CLIENT);
  const provider = oauthTestProvider(double.url);
  registerExtraProvider(provider);
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), workerLog.log, {
    connectors: [...CONNECTORS, oauthTestConnector({ provider, apiUrl: double.url, db: testEnv.db, credentialsKey: key, log: workerLog.log })],
  });
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), consoleLog.log, { audit: { record: (event) => void audit.push(event) } });
  const saved = await fetch(`${consoleService.address}/api/connect/test-oauth/app`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(CLIENT),
  });
  expect(saved.status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await double?.close();
});

describe('an oauth sign-in through the Console', () => {
  let signInId = '';
  let firstCallback = '';
  let firstCookie = '';

  it('asks for exactly the descriptor scopes with PKCE S256, and never serves the app credentials back', async () => {
    const listed = await fetch(`${consoleService.address}/api/providers`);
    const text = await listed.text();
    expect(text).not.toContain(CLIENT.clientSecret);
    expect(text).not.toContain(CLIENT.clientId);
    expect(JSON.parse(text)).toMatchObject({
      providers: expect.arrayContaining([
        expect.objectContaining({ kind: 'test-oauth', signIn: 'oauth', oauth: { scopes: SCOPES, appSaved: true, callbackPath: '/api/connect/test-oauth/callback' } }),
      ]),
    });
    const start = await fetch(`${consoleService.address}/api/connect/test-oauth/start`, { redirect: 'manual' });
    const location = new URL(start.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(`${double.url}/authorize`);
    expect(location.searchParams.get('scope')).toBe(SCOPES.join(' '));
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(location.searchParams.get('redirect_uri')).toBe(`${consoleService.address}/api/connect/test-oauth/callback`);
  });

  it('makes exactly one connection per granted sector: 2 of 3 scopes → 2 connections, both synced', async () => {
    const answer = await signIn(['Mail.Read', 'Calendars.Read']);
    expect(answer.status).toBe(200);
    signInId = answer.body.signInId as string;
    firstCallback = answer.callback;
    firstCookie = answer.cookie;
    expect((answer.body.connections as Array<{ sector: string }>).map((connection) => connection.sector).sort()).toEqual(['calendar', 'mail']);
    expect((await connectionsOfSignIn(signInId)).map((row) => row.sector)).toEqual(['calendar', 'mail']);
    await waitFor(async () => ((await connectionsOfSignIn(signInId)).every((row) => row.last_synced_at !== null) ? true : undefined), 10_000, 'the first syncs');
  });

  it('makes no connection when no usable scope is granted, and says the sign-in granted no sectors (spec 7)', async () => {
    const before = (await createConnectionQueries(testEnv.db).list()).length;
    double.state.accountId = 'account-2';
    const answer = await signIn(['offline_access']);
    double.state.accountId = 'account-1';
    expect(answer.status).toBe(422);
    expect(answer.body.error).toBe(NO_SECTORS_GRANTED);
    expect((await createConnectionQueries(testEnv.db).list()).length).toBe(before);
  });

  it('refuses a replayed, forged or other-browser callback state', async () => {
    const replayed = await fetch(firstCallback, { headers: { cookie: firstCookie } });
    expect(replayed.status).toBe(400);
    expect(((await replayed.json()) as { error: string }).error).toBe(SIGN_IN_STATE_REFUSED);
    // A browser's navigation (Accept: text/html) gets the same refusal as a page it reads, with no script.
    const forged = await fetch(`${consoleService.address}/api/connect/test-oauth/callback?code=x&state=forged`, { headers: { cookie: firstCookie, accept: BROWSER_ACCEPT } });
    expect(forged.status).toBe(400);
    expect(forged.headers.get('content-type')).toMatch(/^text\/html/);
    expect([forged.headers.get('vary'), forged.headers.get('cache-control')]).toEqual(['Accept', 'no-store']);
    const page = await forged.text();
    expect(page).toContain(`<p class="notice error" role="alert" id="sign-in-message">${SIGN_IN_STATE_REFUSED}</p>`);
    expect(page).toContain('<a href="/#connections"');
    expect(page).not.toMatch(/<script|\son\w+=/i);
    // A state started by one browser and brought back by another (no cookie) is refused, and is spent.
    double.state.grantedScopes = ['Mail.Read'];
    const start = await fetch(`${consoleService.address}/api/connect/test-oauth/start`, { redirect: 'manual' });
    const consent = await fetch(start.headers.get('location') ?? '', { redirect: 'manual' });
    expect((await fetch(consent.headers.get('location') ?? '')).status).toBe(400);
    expect((await connectionsOfSignIn(signInId)).length).toBe(2);
  });

  it('refreshes once when two connections of the sign-in sync at once, and writes the rotated tokens back', async () => {
    double.expireAccessTokens();
    double.state.refreshDelayMs = 300;
    const before = { refreshes: double.state.refreshes, unauthorized: double.state.unauthorized };
    const synced = async () => (await connectionsOfSignIn(signInId)).map((row) => row.last_synced_at ?? '');
    const previous = await synced();
    for (const row of await connectionsOfSignIn(signInId)) {
      expect((await fetch(`${consoleService.address}/api/connections/${row.id}/sync`, { method: 'POST' })).status).toBe(202);
    }
    await waitFor(async () => ((await synced()).every((at, index) => at !== previous[index]) ? true : undefined), 10_000, 'both syncs');
    expect(double.state.unauthorized - before.unauthorized).toBe(2);
    expect(double.state.refreshes - before.refreshes).toBe(1);

    // The rotated refresh token was stored: the next refresh presents it and succeeds.
    double.expireAccessTokens();
    const [mail] = (await connectionsOfSignIn(signInId)).filter((row) => row.sector === 'mail');
    const last = mail?.last_synced_at;
    await fetch(`${consoleService.address}/api/connections/${mail?.id}/sync`, { method: 'POST' });
    await waitFor(async () => ((await createConnectionQueries(testEnv.db).get(mail?.id ?? ''))?.last_synced_at !== last ? true : undefined), 10_000, 'the sync after rotation');
    expect(double.state.refreshes - before.refreshes).toBe(2);
  });

  it('puts every connection of the sign-in into needs sign-in when the refresh is refused, shown in /api/status and the context', async () => {
    double.revokeGrant();
    double.expireAccessTokens();
    const [first] = await connectionsOfSignIn(signInId);
    await fetch(`${consoleService.address}/api/connections/${first?.id}/sync`, { method: 'POST' });
    await waitFor(async () => ((await connectionsOfSignIn(signInId)).every((row) => row.status === 'needs_sign_in') ? true : undefined), 10_000, 'needs sign-in');
    const status = (await (await fetch(`${consoleService.address}/api/status`)).json()) as { connections: Array<{ id: string; status: string; health: string }> };
    const ids = new Set((await connectionsOfSignIn(signInId)).map((row) => row.id));
    expect(status.connections.filter((row) => ids.has(row.id)).map((row) => [row.status, row.health])).toEqual([
      ['needs_sign_in', 'needs_sign_in'],
      ['needs_sign_in', 'needs_sign_in'],
    ]);
    const context = (await (await fetch(`${consoleService.address}/api/operator/context`)).json()) as { connections: Array<{ id: string; status: string }> };
    expect(context.connections.filter((row) => ids.has(row.id)).map((row) => row.status)).toEqual(['needs_sign_in', 'needs_sign_in']);
  });

  it('lists each sign-in with the connections it holds, its status and its last refresh, and no credential (GET /api/sign-ins)', async () => {
    const answer = await fetch(`${consoleService.address}/api/sign-ins`);
    expect(answer.status).toBe(200);
    const text = await answer.text();
    expect(text).not.toContain(DOUBLE_SECRET_PREFIX);
    const { signIns } = JSON.parse(text) as { signIns: Array<{ id: string; provider: string; status: string; accountId: string | null; lastRefreshedAt: string | null; connections: Array<{ sector: string; status: string }> }> };
    const listed = signIns.filter((row) => row.provider === 'test-oauth');
    // The refused sign-ins (no sectors, other browser) left none.
    expect(listed.map((row) => row.id)).toEqual([signInId]);
    expect(listed[0]).toMatchObject({ status: 'needs_sign_in', accountId: 'account-1' });
    expect(listed[0]?.connections.map((connection) => [connection.sector, connection.status])).toEqual([
      ['calendar', 'needs_sign_in'],
      ['mail', 'needs_sign_in'],
    ]);
    expect(Date.parse(listed[0]?.lastRefreshedAt ?? '')).not.toBeNaN();
  });

  it('renews the sign-in in place for the same account, keeping its rows', async () => {
    const answer = await signIn(['Mail.Read', 'Calendars.Read'], `?signInId=${signInId}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ signInId, renewed: true, waiting: [] });
    expect((await connectionsOfSignIn(signInId)).map((row) => row.status)).toEqual(['active', 'active']);
  });

  it('leaves one operator row per ended sign-in and no credential, code or state in any row or log line', async () => {
    const rows = audit.filter((event) => event.tool === 'sign_in');
    expect(rows.map((event) => event.outcome)).toEqual(['ok', 'error', 'error', 'error', 'error', 'ok']);
    expect(rows.every((event) => event.agentId === 'operator' && event.decision === 'allow')).toBe(true);
    const everything = [JSON.stringify(audit), ...consoleLog.lines(), ...workerLog.lines()].join('\n');
    expect(everything).not.toContain(DOUBLE_SECRET_PREFIX);
    expect(everything).not.toContain(CLIENT.clientSecret);
    const state = new URL(firstCallback).searchParams.get('state') ?? '';
    expect(state).not.toBe('');
    expect(everything).not.toContain(state);
  });
});

describe('a token endpoint that cannot answer now, or refuses the application (issue 31 item 13)', () => {
  let signInId = '';
  const rows = () => connectionsOfSignIn(signInId);
  const syncNow = async (id: string) => expect((await fetch(`${consoleService.address}/api/connections/${id}/sync`, { method: 'POST' })).status).toBe(202);
  const syncedAt = async (id: string) => (await createConnectionQueries(testEnv.db).get(id))?.last_synced_at ?? null;
  const signInRow = async () => (await createSignInQueries(testEnv.db).get(signInId)) ?? undefined;

  beforeAll(async () => {
    double.state.accountId = 'account-13';
    const answer = await signIn(['Mail.Read', 'Calendars.Read']);
    double.state.accountId = 'account-1';
    expect(answer.status).toBe(200);
    signInId = answer.body.signInId as string;
    await waitFor(async () => ((await rows()).every((row) => row.last_synced_at !== null) ? true : undefined), 10_000, 'the first syncs');
  });

  it.each([
    // RFC 6585 4: 429 Too Many Requests, with Retry-After. The OAuth-style body is a guess: no reference
    // in hand shows a token endpoint's 429 body; it is what turned a throttled refresh into "grant gone".
    ['429 with Retry-After', { status: 429, retryAfter: '1', body: { error: 'temporarily_unavailable', error_description: 'too many requests' } }],
    // RFC 9110 15.5.9: 408 Request Timeout, the server gave up waiting for the request. The body is a guess, as above.
    ['408', { status: 408, body: { error: 'temporarily_unavailable', error_description: 'request timed out' } }],
    // RFC 9110 15.6.4 and 10.2.3: 503 with Retry-After.
    ['503 with Retry-After', { status: 503, retryAfter: '1', body: { error: 'temporarily_unavailable' } }],
    // Microsoft identity platform, "Error codes for token endpoint errors": `temporarily_unavailable`, "the server
    // is temporarily too busy to handle the request", retry after a small delay (400, RFC 6749 5.2's status).
    ['400 temporarily_unavailable', { status: 400, body: { error: 'temporarily_unavailable', error_description: 'AADSTS: the server is busy' } }],
  ] satisfies Array<[string, TokenFailure]>)('answered %s to a refresh, retries the sync and leaves every connection of the sign-in as it was', async (_label, failure) => {
    double.expireAccessTokens();
    double.state.tokenFailures = [failure];
    const before = double.state.refreshRequests;
    const [calendar, mail] = await rows();
    const last = mail?.last_synced_at ?? null;
    await syncNow(mail?.id ?? '');
    await waitFor(async () => ((await syncedAt(mail?.id ?? '')) !== last ? true : undefined), 15_000, 'the sync after the retry');
    expect(double.state.refreshRequests - before).toBe(2);
    expect((await rows()).map((row) => [row.sector, row.status])).toEqual([
      ['calendar', 'active'],
      ['mail', 'active'],
    ]);
    expect((await rows())[0]?.last_error).toBe(calendar?.last_error);
    expect(await signInRow()).toMatchObject({ status: 'active', last_error: null });
    if (failure.status === 429) {
      const logged = workerLog.lines().map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(logged).toContainEqual(expect.objectContaining({ msg: 'source rate limited the sync', connectionId: mail?.id, retryAfterMs: 1_000 }));
    }
  });

  it('refused the application (invalid_client, an expired secret): keeps the grant, says to replace the credentials in Settings, and new ones heal it without a sign-in', async () => {
    const NEW_SECRET = 'SENTINEL-client-secret-renewed';
    double.replaceClientSecret(NEW_SECRET);
    double.expireAccessTokens();
    const [, mail] = await rows();
    await syncNow(mail?.id ?? '');
    await waitFor(async () => ((await rows()).every((row) => row.status === 'error') ? true : undefined), 10_000, 'both connections in error');
    const message = (await signInRow())?.last_error ?? '';
    expect(message).toMatch(/^Test OAuth provider refused the gateway's application credentials \(invalid_client\)/);
    expect(message).toMatch(/Settings/);
    expect(message).not.toMatch(/sign in again/);
    expect(await signInRow()).toMatchObject({ status: 'active' });
    expect((await rows()).map((row) => [row.status, row.last_error])).toEqual([
      ['error', message],
      ['error', message],
    ]);
    const status = (await (await fetch(`${consoleService.address}/api/status`)).json()) as { connections: Array<{ id: string; health: string; last_error: string }> };
    const mine = new Set((await rows()).map((row) => row.id));
    expect(status.connections.filter((row) => mine.has(row.id)).map((row) => [row.health, row.last_error])).toEqual([
      ['error', message],
      ['error', message],
    ]);

    // A new sign-in cannot help: the code exchange is refused for the same reason, and the Console says where to go.
    const again = await signIn(['Mail.Read', 'Calendars.Read'], `?signInId=${signInId}`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatch(/Settings/);

    // New application credentials in Settings: the next syncs renew the access with the grant kept.
    const refreshes = double.state.refreshes;
    const saved = await fetch(`${consoleService.address}/api/connect/test-oauth/app`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CLIENT, clientSecret: NEW_SECRET }),
    });
    expect(saved.status).toBe(204);
    for (const row of await rows()) await syncNow(row.id);
    await waitFor(async () => ((await rows()).every((row) => row.status === 'active' && row.last_error === null) ? true : undefined), 10_000, 'both connections active again');
    expect(double.state.refreshes - refreshes).toBe(1);
    expect(await signInRow()).toMatchObject({ status: 'active', last_error: null });
  });
});
