import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';
import type { RunningGateway } from '../src/service.ts';
import { auditCollector, formFields, postSignIn, REDIRECT_URI, savePublicOrigin, waitForBridge } from './bridge-helpers.ts';
import { INITIALIZE, rawMcp, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
const auditRows = auditCollector(testEnv);
const rowsWhere = (predicate: (row: Record<string, unknown>) => boolean, count = 1) =>
  waitFor(async () => {
    const found = (await auditRows()).filter(predicate);
    return found.length >= count ? found : undefined;
  });

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
});
afterAll(async () => gateway.close());

const url = (path: string) => `${gateway.address}${path}`;
const register = async (body: unknown) =>
  fetch(url(BRIDGE_PATHS.register), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** A registered client and a PKCE pair, ready to open the sign-in page. */
async function newClient(name = 'Refusal tester') {
  const answer = await register({ client_name: name, redirect_uris: [REDIRECT_URI] });
  const clientId = ((await answer.json()) as { client_id: string }).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const params = (overrides: Record<string, string | null> = {}) => {
    const search = new URLSearchParams();
    const all: Record<string, string | null> = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st-123',
      resource: `${gateway.address}/mcp`,
      ...overrides,
    };
    for (const [name, value] of Object.entries(all)) if (value !== null) search.set(name, value);
    return search;
  };
  return { clientId, verifier, challenge, authorizeUrl: (overrides = {}) => `${url(BRIDGE_PATHS.authorize)}?${params(overrides)}` };
}

const signInFields = async (authorizeUrl: string) => {
  const page = await fetch(authorizeUrl);
  expect(page.status).toBe(200);
  return formFields(await page.text());
};

const token = (body: Record<string, string>) =>
  fetch(url(BRIDGE_PATHS.token), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });

describe('bridge on and off without a restart (spec 4.3, 5 rule 4)', () => {
  it('serves nothing and challenges nothing while off, everything once an origin is saved, and nothing again once cleared', async () => {
    const bridgePaths = Object.values(BRIDGE_PATHS);
    const offAnswers = async () => {
      for (const path of bridgePaths) {
        const answer = await fetch(url(path), { method: path === BRIDGE_PATHS.token || path === BRIDGE_PATHS.register ? 'POST' : 'GET' });
        expect(answer.status, path).toBe(404);
        expect(await answer.json()).toEqual({ jsonrpc: '2.0', error: { code: -32601, message: 'Not found' }, id: null });
      }
      const unauthorized = await rawMcp(gateway.address, { body: INITIALIZE });
      expect(unauthorized.status).toBe(401);
      expect(unauthorized.headers.get('www-authenticate')).toBeNull();
    };
    await offAnswers();

    await savePublicOrigin(testEnv, gateway.address);
    await waitForBridge(gateway.address, true);
    for (const path of [BRIDGE_PATHS.protectedResource, BRIDGE_PATHS.protectedResourceMcp, BRIDGE_PATHS.authorizationServer]) {
      expect((await fetch(url(path))).status, path).toBe(200);
    }
    const unauthorized = await rawMcp(gateway.address, { body: INITIALIZE });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${gateway.address}/.well-known/oauth-protected-resource/mcp"`,
    );
    // Any other path is still 404 with the bridge on: the eight addresses and nothing else.
    for (const path of ['/.well-known/openid-configuration', '/revoke', '/authorize/extra', '/']) {
      expect((await fetch(url(path))).status, path).toBe(404);
    }

    await savePublicOrigin(testEnv, null);
    await waitForBridge(gateway.address, false);
    await offAnswers();
    await savePublicOrigin(testEnv, gateway.address);
    await waitForBridge(gateway.address, true);
  });

  it('records an initialize with no key only while the bridge is on (spec 6)', async () => {
    await rawMcp(gateway.address, { body: INITIALIZE });
    const rows = await rowsWhere((row) => row.tool === 'initialize' && row.denyReason === 'missing');
    expect(rows[0]).toMatchObject({ agentId: null, decision: 'deny', sector: null });
  });
});

describe('the metadata documents (RFC 8414, RFC 9728)', () => {
  it('advertise exactly the values of spec 4.3, built from the saved origin whatever Host or forwarding headers say', async () => {
    const headers = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
    const server = await (await fetch(url(BRIDGE_PATHS.authorizationServer), { headers })).json();
    expect(server).toEqual({
      issuer: gateway.address,
      authorization_endpoint: `${gateway.address}/authorize`,
      token_endpoint: `${gateway.address}/token`,
      registration_endpoint: `${gateway.address}/register`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
    });
    const root = await (await fetch(url(BRIDGE_PATHS.protectedResource), { headers })).json();
    const pathAware = await (await fetch(url(BRIDGE_PATHS.protectedResourceMcp), { headers })).json();
    expect(pathAware).toEqual(root);
    expect(root).toEqual({
      resource: `${gateway.address}/mcp`,
      authorization_servers: [gateway.address],
      bearer_methods_supported: ['header'],
      resource_name: 'pcg-test-gateway',
    });
  });
});

describe('dynamic client registration (RFC 7591)', () => {
  it('registers a public client: 201, no secret, no null, grant types that agree with the metadata', async () => {
    const answer = await register({
      client_name: 'ChatGPT',
      redirect_uris: ['https://chatgpt.com/connector/oauth/abc123'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_post',
      logo_uri: null,
    });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const body = (await answer.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      client_name: 'ChatGPT',
      redirect_uris: ['https://chatgpt.com/connector/oauth/abc123'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    expect(body.client_id).toMatch(/^pcgc_/);
    expect(body).not.toHaveProperty('client_secret');
    expect(JSON.stringify(body)).not.toContain('null');
  });

  it.each([
    ['no redirect_uris', { client_name: 'x' }, 'invalid_client_metadata'],
    ['an http redirect off loopback', { redirect_uris: ['http://example.com/cb'] }, 'invalid_redirect_uri'],
    ['a javascript: redirect', { redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    ['an unsupported grant type', { redirect_uris: [REDIRECT_URI], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
  ])('refuses %s with 400 %s and a description of what to fix', async (_label, body, error) => {
    const answer = await register(body);
    expect(answer.status).toBe(400);
    const json = (await answer.json()) as { error: string; error_description: string };
    expect(json.error).toBe(error);
    expect(json.error_description.length).toBeGreaterThan(10);
  });

  it('refuses a body that is not JSON with 400 invalid_request', async () => {
    const answer = await fetch(url(BRIDGE_PATHS.register), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"redirect_uris": [' });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'invalid_request' });
  });
});

describe('the sign-in page and its refusals (spec 4.3, 5 rule 1, 6, 7)', () => {
  it('shows the client name and the exact redirect destination, escaped, above the key box', async () => {
    const hostile = '<script>alert("x")</script> & Co';
    const { authorizeUrl } = await newClient(hostile);
    const page = await fetch(authorizeUrl());
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-store');
    const html = await page.text();
    expect(html).not.toContain('<script>');
    const name = html.indexOf('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co');
    const destination = html.indexOf(`<code class="dest">${REDIRECT_URI}</code>`);
    const keyBox = html.indexOf('name="agent_key"');
    expect(name).toBeGreaterThan(0);
    expect(destination).toBeGreaterThan(name);
    expect(keyBox).toBeGreaterThan(destination);
  });

  it.each([
    ['an unknown client', { client_id: 'pcgc_nobody' }, 'authorize: unknown client', 'This client is not registered here. Start the connection again from your client so that it registers.'],
    ['a redirect address the client never registered', { redirect_uri: 'https://attacker.example/cb' }, 'authorize: redirect_uri mismatch', 'redirect_uri is not one of the addresses this client registered.'],
  ])('answers %s with a 400 page and no redirect, through the bridge throttle', async (_label, overrides, denial, message) => {
    const { authorizeUrl } = await newClient();
    const answer = await fetch(authorizeUrl(overrides), { redirect: 'manual' });
    expect(answer.status).toBe(400);
    expect(answer.headers.get('location')).toBeNull();
    expect(await answer.text()).toContain(message);
    await rowsWhere((row) => row.tool === 'oauth_authorize' && row.denyReason === denial);
    expect(Number(await testEnv.redis.hget('audit:throttle:bridge', 'count'))).toBeGreaterThan(0);
  });

  it.each([
    ['plain', { code_challenge_method: 'plain' }],
    ['no method', { code_challenge_method: null }],
  ])('sends a challenge method of %s back with the spec 7 message', async (_label, overrides) => {
    const { authorizeUrl } = await newClient();
    const answer = await fetch(authorizeUrl(overrides), { redirect: 'manual' });
    expect(answer.status).toBe(302);
    const location = new URL(answer.headers.get('location') as string);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('error_description')).toBe("code_challenge_method must be 'S256' (plain is not accepted)");
    expect(location.searchParams.get('state')).toBe('st-123');
    expect(location.searchParams.get('iss')).toBe(gateway.address);
  });

  it('refuses a resource that is not this gateway with invalid_target', async () => {
    const { authorizeUrl } = await newClient();
    const answer = await fetch(authorizeUrl({ resource: 'https://other.example/mcp' }), { redirect: 'manual' });
    expect(new URL(answer.headers.get('location') as string).searchParams.get('error')).toBe('invalid_target');
  });

  it('refuses an unknown key on the page, and records "authorize: key refused" at any rate', async () => {
    const { authorizeUrl } = await newClient();
    const answer = await postSignIn(gateway.address, await signInFields(authorizeUrl()), `pcg_${'z'.repeat(43)}`);
    expect(answer.status).toBe(401);
    const html = await answer.text();
    expect(html).toContain('This agent key was refused (unknown agent). Paste the key of an active agent, or create one in the Console.');
    expect(html).toContain('name="agent_key"');
    const [row] = await rowsWhere((row) => row.denyReason === 'authorize: key refused');
    expect(row).toMatchObject({ tool: 'oauth_authorize', decision: 'deny', agentId: null, sector: null });
    expect(row?.argsJson).not.toContain('pcg_');
  });

  it('refuses a key that never expires with the message of spec 5 rule 1, and records "authorize: key has no expiry"', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'forever-agent', sectors: ['home'] });
    const { authorizeUrl } = await newClient();
    const answer = await postSignIn(gateway.address, await signInFields(authorizeUrl()), key);
    expect(answer.status).toBe(403);
    expect(answer.headers.get('location')).toBeNull();
    const html = await answer.text();
    expect(html).toContain(
      'This agent key never expires. Keys used with a cloud client must have an expiry of 30, 90 or 365 days: give the agent an expiry in the Console, then sign in again.',
    );
    const [row] = await rowsWhere((row) => row.denyReason === 'authorize: key has no expiry');
    expect(row).toMatchObject({ tool: 'oauth_authorize', agentId: 'forever-agent', decision: 'deny' });
  });

  it('refuses a stale or altered form without looking at the key', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'form-agent', sectors: ['home'], expiresInDays: 30 });
    const { authorizeUrl } = await newClient();
    const fields = await signInFields(authorizeUrl());
    const [issuedAt, mac] = (fields.form_token as string).split('.');
    const answers = await Promise.all([
      postSignIn(gateway.address, { ...fields, form_token: `${Number(issuedAt) - 11 * 60 * 1000}.${mac}` }, key),
      postSignIn(gateway.address, { ...fields, code_challenge: createHash('sha256').update('other').digest('base64url') }, key),
      postSignIn(gateway.address, { ...fields, form_token: '' }, key),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(await answer.text()).toContain('This sign-in form has expired. Start the connection again from your client.');
    }
    await rowsWhere((row) => row.denyReason === 'authorize: stale form', 3);
  });

  it('sends access_denied back when the operator denies', async () => {
    const { authorizeUrl } = await newClient();
    const answer = await postSignIn(gateway.address, await signInFields(authorizeUrl()), '', 'deny');
    expect(answer.status).toBe(302);
    expect(new URL(answer.headers.get('location') as string).searchParams.get('error')).toBe('access_denied');
  });
});

describe('the token endpoint (spec 3.3, 4.3)', () => {
  async function approvedCode() {
    const key = await createTestAgent(testEnv.db, { name: `token-agent-${randomBytes(3).toString('hex')}`, sectors: ['home'], expiresInDays: 30 });
    const client = await newClient();
    const answer = await postSignIn(gateway.address, await signInFields(client.authorizeUrl()), key);
    expect(answer.status).toBe(302);
    const location = new URL(answer.headers.get('location') as string);
    expect(location.searchParams.get('state')).toBe('st-123');
    expect(location.searchParams.get('iss')).toBe(gateway.address);
    return { ...client, code: location.searchParams.get('code') as string };
  }
  const exchange = (flow: Awaited<ReturnType<typeof approvedCode>>, overrides: Record<string, string> = {}) =>
    token({ grant_type: 'authorization_code', code: flow.code, code_verifier: flow.verifier, redirect_uri: REDIRECT_URI, client_id: flow.clientId, ...overrides });

  it.each([
    ['a wrong code_verifier', { code_verifier: randomBytes(32).toString('base64url') }],
    ['another redirect_uri', { redirect_uri: 'http://127.0.0.1:9/other' }],
    ['an unknown code', { code: 'pcgac_unknown' }],
  ])('refuses %s with invalid_grant, and the code still works for its rightful holder', async (_label, overrides) => {
    const flow = await approvedCode();
    const refused = await exchange(flow, overrides);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await exchange(flow)).status).toBe(200);
  });

  it('refuses an unknown client with 401 invalid_client and an unsupported grant type with unsupported_grant_type', async () => {
    const flow = await approvedCode();
    const unknown = await exchange(flow, { client_id: 'pcgc_nobody' });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_client' });
    const password = await token({ grant_type: 'password', client_id: flow.clientId });
    expect(await password.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });

  it('issues pcgat_ access tokens of 3600 s uncached, and a code works once: a second exchange revokes what the first gave', async () => {
    const flow = await approvedCode();
    const first = await exchange(flow);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const tokens = (await first.json()) as Record<string, unknown>;
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(tokens.access_token).toMatch(/^pcgat_[A-Za-z0-9_-]{43}$/);
    const second = await exchange(flow);
    expect(await second.json()).toMatchObject({ error: 'invalid_grant' });
    const initialize = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${tokens.access_token as string}` }, body: INITIALIZE });
    expect(initialize.status).toBe(401);
  });

  it('refuses a bridge token whose origin is no longer the saved one (the token audience)', async () => {
    const flow = await approvedCode();
    const tokens = (await (await exchange(flow)).json()) as { access_token: string };
    const initialize = () => rawMcp(gateway.address, { headers: { authorization: `Bearer ${tokens.access_token}` }, body: INITIALIZE });
    expect((await initialize()).status).toBe(200);
    await savePublicOrigin(testEnv, 'https://moved.example');
    await waitFor(async () => ((await initialize()).status === 401 ? true : undefined), 5_000, 'the moved origin to apply');
    await savePublicOrigin(testEnv, gateway.address);
    await waitForBridge(gateway.address, true);
    await waitFor(async () => ((await initialize()).status === 200 ? true : undefined), 5_000, 'the origin to come back');
  });
});
