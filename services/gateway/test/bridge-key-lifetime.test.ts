import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAgentService } from '@pcg/shared/grants';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';
import type { RunningGateway } from '../src/service.ts';
import { auditCollector, formFields, postSignIn, REDIRECT_URI, savePublicOrigin, waitForBridge } from './bridge-helpers.ts';
import { INITIALIZE, rawMcp, startTestGateway } from './gateway-harness.ts';

// The bridge on a gateway whose clock the test moves: a key's expiry and the refusal cap's windows.
const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let clockOffsetMs = 0;
const auditRows = auditCollector(testEnv);
const DAY_MS = 86_400_000;
/** Spec 6 and 8: counted refusal lines, 30 a minute per kind. */
const REFUSALS_RECORDED_A_MINUTE = 30;
const MINUTE_MS = 60_000;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv, {}, { now: () => new Date(Date.now() + clockOffsetMs) });
  await savePublicOrigin(testEnv, gateway.address);
  await waitForBridge(gateway.address, true);
});
afterAll(async () => gateway.close());
beforeEach(() => {
  clockOffsetMs = 0;
});

const url = (path: string) => `${gateway.address}${path}`;
const form = (path: string, body: Record<string, string>) =>
  fetch(url(path), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });

/** A registered client with a PKCE pair; `authorizeUrl` opens its sign-in page. */
async function newClient() {
  const registered = await fetch(url(BRIDGE_PATHS.register), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Lifetime tester', redirect_uris: [REDIRECT_URI] }),
  });
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st',
    resource: `${gateway.address}/mcp`,
  });
  return { clientId, verifier, authorizeUrl: `${url(BRIDGE_PATHS.authorize)}?${search}` };
}

async function signInFields(authorizeUrl: string) {
  const page = await fetch(authorizeUrl);
  expect(page.status).toBe(200);
  return formFields(await page.text());
}

/** Signs in with the key and exchanges the code: the client id and the first token pair. */
async function tokensFor(key: string) {
  const client = await newClient();
  const approved = await postSignIn(gateway.address, await signInFields(client.authorizeUrl), key);
  expect(approved.status).toBe(302);
  const code = new URL(approved.headers.get('location') as string).searchParams.get('code') as string;
  const exchanged = await form(BRIDGE_PATHS.token, { grant_type: 'authorization_code', code, code_verifier: client.verifier, redirect_uri: REDIRECT_URI, client_id: client.clientId });
  expect(exchanged.status).toBe(200);
  return { clientId: client.clientId, ...((await exchanged.json()) as { access_token: string; refresh_token: string }) };
}

const refresh = (clientId: string, refreshToken: string) => form(BRIDGE_PATHS.token, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });
const initializeWith = (token: string) => rawMcp(gateway.address, { headers: { authorization: `Bearer ${token}` }, body: INITIALIZE });

describe('a key\'s deadline and its bridge chain (spec 3.3, 5 rule 1)', () => {
  it('keeps refreshing a chain whose key lost its deadline after sign-in: the never-expires refusal is for sign-in only', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'deadline-removed', sectors: ['home'], expiresInDays: 30 });
    const first = await tokensFor(key);
    await createAgentService({ db: testEnv.db, events: { publish: async () => undefined }, log: createCapturingLogger().log }).update('deadline-removed', { expiresInDays: null });
    const refreshed = await refresh(first.clientId, first.refresh_token);
    expect(refreshed.status).toBe(200);
    const next = (await refreshed.json()) as { access_token: string; refresh_token: string };
    expect((await initializeWith(next.access_token)).status).toBe(200);
    // And again a day later: still no refusal for the missing deadline.
    clockOffsetMs = DAY_MS;
    expect((await refresh(first.clientId, next.refresh_token)).status).toBe(200);
  });

  it("ends the chain at the key's expiry: the refresh token is refused once the key is dead", async () => {
    const key = await createTestAgent(testEnv.db, { name: 'deadline-kept', sectors: ['home'], expiresInDays: 2 });
    const first = await tokensFor(key);
    clockOffsetMs = DAY_MS;
    const refreshed = await refresh(first.clientId, first.refresh_token);
    expect(refreshed.status).toBe(200);
    const next = (await refreshed.json()) as { access_token: string; refresh_token: string };
    clockOffsetMs = 2 * DAY_MS + 60_000;
    const dead = await refresh(first.clientId, next.refresh_token);
    expect(dead.status).toBe(400);
    expect(await dead.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await initializeWith(next.access_token)).status).toBe(401);
  });
});

describe('the bridge refusal cap never counts a refused agent key (spec 6)', () => {
  it('records 35 refused keys at any rate, and then still records 30 cheap refusals in the same window', async () => {
    // A window later than any the tests above moved the clock to (the throttle never goes back a window).
    const window = Math.floor((Date.now() + 10 * DAY_MS) / MINUTE_MS);
    clockOffsetMs = window * MINUTE_MS + 1_000 - Date.now();
    const client = await newClient();
    const fields = await signInFields(client.authorizeUrl);
    for (let n = 0; n < 35; n += 1) expect((await postSignIn(gateway.address, fields, `pcg_${randomBytes(32).toString('base64url')}`)).status).toBe(401);
    const unknownClient = `${url(BRIDGE_PATHS.authorize)}?${new URLSearchParams({ response_type: 'code', client_id: 'pcgc_nobody', redirect_uri: REDIRECT_URI, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`;
    for (let n = 0; n < REFUSALS_RECORDED_A_MINUTE; n += 1) expect((await fetch(unknownClient)).status).toBe(400);
    const rows = await waitFor(async () => {
      const all = await auditRows();
      const keyRefused = all.filter((row) => row.denyReason === 'authorize: key refused');
      const cheap = all.filter((row) => row.denyReason === 'authorize: unknown client');
      return keyRefused.length >= 35 && cheap.length >= REFUSALS_RECORDED_A_MINUTE ? { keyRefused, cheap, all } : undefined;
    }, 10_000, 'every refusal row');
    expect(rows.keyRefused).toHaveLength(35);
    expect(rows.cheap).toHaveLength(REFUSALS_RECORDED_A_MINUTE);
    expect(rows.all.filter((row) => String(row.denyReason).startsWith('throttled:'))).toEqual([]);
  });
});
