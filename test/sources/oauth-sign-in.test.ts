import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { registerExtraProvider, type ProviderDescriptor } from '@pcg/shared/providers';
import { NO_SECTORS_GRANTED } from '@pcg/shared/sign-ins';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { SIGN_IN_STATE_REFUSED } from '../../services/console/src/sign-ins/sign-in-service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import type { Connector } from '../../services/sync-worker/src/connectors/connector-types.ts';
import { defaultConnectors } from '../../services/sync-worker/src/connectors/registry.ts';
import { SourceUnavailableError } from '../../services/sync-worker/src/connectors/kit/source-errors.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import type { OAuthCredentials } from '../../services/sync-worker/src/sign-ins/oauth-client.ts';
import { createTokenRefresher } from '../../services/sync-worker/src/sign-ins/token-refresh.ts';
import { DOUBLE_SECRET_PREFIX, startOAuthProviderDouble, type OAuthProviderDouble } from '../support/oauth-provider-double.ts';

// The oauth sign-in end to end (issue 14, done when): the Console's routes, the sync-worker's code
// exchange and token refresh, against a test provider that ships in no service.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const CLIENT = { clientId: 'SENTINEL-client-id', clientSecret: 'SENTINEL-client-secret' };
/** Spec 2.5's Microsoft-style rule, on a test provider kind registered in this file's processes only. */
const SCOPES = ['Mail.Read', 'Calendars.Read', 'Contacts.Read', 'offline_access'];
const SCOPE_SECTORS = { 'Mail.Read': 'mail', 'Calendars.Read': 'calendar', 'Contacts.Read': 'contacts' } as const;
const OBJECT_OF = { mail: 'mail.message', calendar: 'calendar.event', contacts: 'contacts.contact' } as const;

let double: OAuthProviderDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
const consoleLog = createCapturingLogger('console');
const workerLog = createCapturingLogger('sync-worker');
const audit: AuditEvent[] = [];

function testProvider(url: string): ProviderDescriptor {
  return {
    kind: 'test-oauth',
    displayName: 'Test OAuth provider',
    sectors: ['mail', 'calendar', 'contacts'],
    objects: Object.values(OBJECT_OF),
    signIn: 'oauth',
    defaultSyncIntervalMinutes: 60,
    oauth: {
      authorizeUrl: `${url}/authorize`,
      tokenUrl: `${url}/token`,
      scopes: SCOPES,
      pkce: true,
      sectorsOf: (granted) => Object.entries(SCOPE_SECTORS).flatMap(([scope, sector]) => (granted.includes(scope) ? [sector] : [])),
      account: { url: `${url}/me`, field: 'id' },
    },
  };
}

/** Reads the double's API with the sign-in's token; on a 401 it asks for a refresh, as every OAuth connector will. */
function testConnector(provider: ProviderDescriptor): Connector {
  const refresher = createTokenRefresher({ db: testEnv.db, credentialsKey: key, log: workerLog.log, requestTimeoutMs: 2_000 });
  const items = (token: string) => fetch(`${double.url}/items`, { headers: { authorization: `Bearer ${token}` } });
  return {
    provider,
    actions: [],
    async sync(context) {
      const signInId = (await createConnectionQueries(testEnv.db).get(context.connection.id))?.sign_in_id ?? '';
      let token = (context.credentials as OAuthCredentials).accessToken;
      let response = await items(token);
      if (response.status === 401) {
        token = (await refresher.refreshAccessToken(signInId, { rejected: token })).accessToken;
        response = await items(token);
      }
      if (!response.ok) throw new SourceUnavailableError(`the test API answered ${response.status}`);
      const { items: found } = (await response.json()) as { items: Array<{ id: string; title: string }> };
      const sector = context.connection.sector as keyof typeof OBJECT_OF;
      const record = (item: { id: string; title: string }) =>
        ({ mail: { subject: item.title }, calendar: { title: item.title, all_day: false }, contacts: { display_name: item.title } })[sector];
      await context.cache.upsert(OBJECT_OF[sector], found.map((item) => ({ source_id: item.id, ...record(item) })));
      return { mode: 'full', cursor: { at: Date.now() } };
    },
  };
}

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
  const provider = testProvider(double.url);
  registerExtraProvider(provider);
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), workerLog.log, {
    connectors: [...defaultConnectors(), testConnector(provider)],
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
    const listed = await fetch(`${consoleService.address}/api/connect`);
    const text = await listed.text();
    expect(text).not.toContain(CLIENT.clientSecret);
    expect(text).not.toContain(CLIENT.clientId);
    expect(JSON.parse(text)).toMatchObject({ providers: expect.arrayContaining([expect.objectContaining({ provider: 'test-oauth', signIn: 'oauth', scopes: SCOPES, appSaved: true })]) });
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
    const forged = await fetch(`${consoleService.address}/api/connect/test-oauth/callback?code=x&state=forged`, { headers: { cookie: firstCookie } });
    expect(forged.status).toBe(400);
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
