import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { PG_VALUE_RULES } from '@pcg/shared/validation';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';
import { BRIDGE_INPUT_ERRORS } from '../src/bridge/bridge-routes.ts';
import type { RunningGateway } from '../src/service.ts';
import { formFields, REDIRECT_URI, savePublicOrigin, waitForBridge } from './bridge-helpers.ts';
import { startTestGateway } from './gateway-harness.ts';

/**
 * Issue 12 items 6 and 7 on the internet-facing bridge: text Postgres cannot hold, and a client id that
 * does not decode, are OAuth 4xx answers naming the parameter, never a 500; stored clients are untouched.
 */
const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let clientId: string;
const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');

const url = (path: string) => `${gateway.address}${path}`;
const register = (body: unknown) => fetch(url(BRIDGE_PATHS.register), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const token = (body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url(BRIDGE_PATHS.token), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) });
const authorizeQuery = (overrides: Record<string, string>) =>
  new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st-1',
    ...overrides,
  });
const clientCount = () => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM oauth_clients`);

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  await savePublicOrigin(testEnv, gateway.address);
  await waitForBridge(gateway.address, true);
  const answer = await register({ client_name: 'Kept client', redirect_uris: [REDIRECT_URI] });
  clientId = ((await answer.json()) as { client_id: string }).client_id;
});
afterAll(async () => gateway.close());

/** The registered client still signs in: nothing stored was lost to the hostile requests. */
async function expectClientIntact() {
  const page = await fetch(`${url(BRIDGE_PATHS.authorize)}?${authorizeQuery({})}`);
  expect(page.status).toBe(200);
  expect(formFields(await page.text()).client_id).toBe(clientId);
}

describe('GET and POST /authorize', () => {
  it('refuses a NUL in client_id with a 400 page naming client_id', async () => {
    const page = await fetch(`${url(BRIDGE_PATHS.authorize)}?${authorizeQuery({ client_id: 'a\u0000b' })}`);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain(`client_id ${PG_VALUE_RULES.text}`);
    await expectClientIntact();
  });

  it('refuses a bare client_id=%00 the same way', async () => {
    const page = await fetch(`${url(BRIDGE_PATHS.authorize)}?client_id=%00`);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain(`client_id ${PG_VALUE_RULES.text}`);
  });

  it('refuses a NUL in the posted form, naming the field', async () => {
    const answer = await fetch(url(BRIDGE_PATHS.authorize), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: authorizeQuery({ client_id: 'a\u0000b', agent_key: 'k', decision: 'approve' }),
    });
    expect(answer.status).toBe(400);
    expect(await answer.text()).toContain(`client_id ${PG_VALUE_RULES.text}`);
  });

  it('sends a NUL in scope back to the registered client as invalid_request naming scope', async () => {
    const answer = await fetch(`${url(BRIDGE_PATHS.authorize)}?${authorizeQuery({ scope: 'read\u0000' })}`, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    const location = new URL(answer.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('error_description')).toBe(`scope ${PG_VALUE_RULES.text}`);
    expect(location.searchParams.get('state')).toBe('st-1');
  });
});

describe('POST /token', () => {
  it('answers a NUL in client_id with 400 invalid_request naming client_id', async () => {
    const answer = await token({ grant_type: 'refresh_token', client_id: 'a\u0000b', refresh_token: 'x' });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ error: 'invalid_request', error_description: `client_id ${PG_VALUE_RULES.text}` });
    await expectClientIntact();
  });

  it('answers a Basic client id that does not decode (a lone %) with 400 invalid_request', async () => {
    const answer = await token({ grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: 'Basic JQ==' });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ error: 'invalid_request', error_description: BRIDGE_INPUT_ERRORS.basicClientId });
  });

  it('answers a Basic client id that decodes to a NUL with 400 invalid_request naming client_id', async () => {
    const basic = Buffer.from('a%00b:').toString('base64');
    const answer = await token({ grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: `Basic ${basic}` });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ error: 'invalid_request', error_description: `client_id ${PG_VALUE_RULES.text}` });
  });

  it('answers bytes that are not UTF-8 (an encoded lone surrogate) as an unknown client, not a 500', async () => {
    const answer = await fetch(url(BRIDGE_PATHS.token), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&refresh_token=x&client_id=%ED%A0%80',
    });
    expect(answer.status).toBe(401);
    expect(((await answer.json()) as { error: string }).error).toBe('invalid_client');
  });

  it('still reads a well-formed Basic client id', async () => {
    const answer = await token({ grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: `Basic ${Buffer.from(`${clientId}:`).toString('base64')}` });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: string }).error).toBe('invalid_grant');
  });
});

describe('POST /register', () => {
  it.each([['a NUL', 'https://app.example/cb\u0000'], ['a lone surrogate', 'https://app.example/\ud800']])(
    'refuses %s in a redirect URI with 400 invalid_redirect_uri, and stores nothing',
    async (_what, uri) => {
      const before = await clientCount();
      const answer = await register({ client_name: 'Hostile', redirect_uris: [REDIRECT_URI, uri] });
      expect(answer.status).toBe(400);
      expect(await answer.json()).toEqual({ error: 'invalid_redirect_uri', error_description: `redirect_uris: a redirect URI ${PG_VALUE_RULES.text}` });
      expect(await clientCount()).toBe(before);
    },
  );

  it('refuses a NUL in client_name or another stored field with 400 invalid_client_metadata naming it', async () => {
    for (const [field, body] of [
      ['client_name', { client_name: 'a\u0000b' }],
      ['software_id', { software_id: '\ud800' }],
    ] as const) {
      const answer = await register({ redirect_uris: [REDIRECT_URI], ...body });
      expect(answer.status).toBe(400);
      expect(await answer.json()).toEqual({ error: 'invalid_client_metadata', error_description: `'${field}' ${PG_VALUE_RULES.text}` });
    }
    await expectClientIntact();
  });
});
