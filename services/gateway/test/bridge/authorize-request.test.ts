import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkAuthorizeRequest,
  redirectUriRegistered,
  resourceMatches,
  withParams,
  type AuthorizeCheck,
  type AuthorizeParams,
} from '../../src/bridge/authorize-request.ts';
import { bridgeEndpoints } from '../../src/bridge/bridge-endpoints.ts';
import type { ClientRow } from '../../src/bridge/bridge-queries.ts';

const ORIGIN = 'https://pcg.example.com';
const endpoints = bridgeEndpoints(ORIGIN);
const CHALLENGE = createHash('sha256').update('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk', 'ascii').digest('base64url');

describe('redirectUriRegistered', () => {
  it.each([
    ['the same https URI', 'https://client.example/cb', ['https://client.example/cb']],
    ['one of several registered', 'https://b.example/cb', ['https://a.example/cb', 'https://b.example/cb']],
    ['a loopback http URI on another port', 'http://127.0.0.1:51234/cb', ['http://127.0.0.1:9/cb']],
    ['a loopback http URI when the registered one has no port', 'http://localhost:33418/callback', ['http://localhost/callback']],
    ['an IPv6 loopback URI on another port', 'http://[::1]:6000/cb', ['http://[::1]:5000/cb']],
    ['a loopback URI with the same query on another port', 'http://localhost:2/cb?x=1', ['http://localhost:1/cb?x=1']],
  ])('accepts %s', (_label, requested, registered) => {
    expect(redirectUriRegistered(requested, registered)).toBe(true);
  });

  it.each([
    ['no registered URI', 'https://client.example/cb', []],
    ['another https path', 'https://client.example/cb2', ['https://client.example/cb']],
    ['a trailing slash', 'https://client.example/cb/', ['https://client.example/cb']],
    ['an extra https query', 'https://client.example/cb?x=1', ['https://client.example/cb']],
    ['an https URI on another port', 'https://client.example:8443/cb', ['https://client.example/cb']],
    ['an https loopback URI on another port', 'https://localhost:2/cb', ['https://localhost:1/cb']],
    ['another host', 'https://evil.example/cb', ['https://client.example/cb']],
    ['http where https was registered', 'http://client.example/cb', ['https://client.example/cb']],
    ['a non-loopback http URI on another port', 'http://client.example:2/cb', ['http://client.example:1/cb']],
    ['a loopback URI with another path', 'http://127.0.0.1:2/other', ['http://127.0.0.1:1/cb']],
    ['a loopback URI with another query', 'http://127.0.0.1:2/cb?x=2', ['http://127.0.0.1:1/cb?x=1']],
    ['a loopback URI with an added query', 'http://127.0.0.1:2/cb?x=1', ['http://127.0.0.1:1/cb']],
    ['another loopback host', 'http://127.0.0.1:2/cb', ['http://localhost:1/cb']],
    ['a loopback https registration asked as http', 'http://localhost:2/cb', ['https://localhost:1/cb']],
    ['a string that is not a URL', 'not a url', ['https://client.example/cb']],
    // "May differ only in port": a fragment (RFC 6749 3.1.2 forbids one) or a userinfo is another difference.
    ['a loopback URI on another port with a fragment added', 'http://127.0.0.1:2/cb#frag', ['http://127.0.0.1:1/cb']],
    ['a loopback URI on another port with a userinfo added', 'http://user:pw@127.0.0.1:2/cb', ['http://127.0.0.1:1/cb']],
  ])('refuses %s', (_label, requested, registered) => {
    expect(redirectUriRegistered(requested, registered)).toBe(false);
  });
});

describe('resourceMatches', () => {
  it.each([endpoints.resource, `${endpoints.resource}/`, ORIGIN, `${ORIGIN}/`])('accepts %s', (requested) => {
    expect(resourceMatches(requested, endpoints)).toBe(true);
  });

  it.each([
    `${ORIGIN}/mcp/other`,
    `${ORIGIN}/other`,
    `${ORIGIN}/mcp//`,
    `${ORIGIN}:8443/mcp`,
    'http://pcg.example.com/mcp',
    'https://evil.example/mcp',
    'https://pcg.example.com.evil.example/mcp',
    '',
  ])('refuses %s', (requested) => {
    expect(resourceMatches(requested, endpoints)).toBe(false);
  });
});

describe('withParams', () => {
  it('keeps an existing query and adds the parameters', () => {
    const url = new URL(withParams('https://client.example/cb?tenant=a', { code: 'c1', state: 's 1&2' }));
    expect(url.origin + url.pathname).toBe('https://client.example/cb');
    expect([...url.searchParams]).toEqual([
      ['tenant', 'a'],
      ['code', 'c1'],
      ['state', 's 1&2'],
    ]);
  });

  it('skips null and undefined values', () => {
    const url = new URL(withParams('https://client.example/cb', { code: 'c1', state: null, iss: undefined }));
    expect([...url.searchParams.keys()]).toEqual(['code']);
  });
});

describe('checkAuthorizeRequest', () => {
  const single: ClientRow = {
    id: 'pcgc_single',
    clientName: 'Claude',
    redirectUris: ['https://claude.ai/api/mcp/auth_callback'],
    metadata: {},
    createdAt: '2026-11-22T12:00:00.000Z',
  };
  const double: ClientRow = { ...single, id: 'pcgc_double', redirectUris: ['https://a.example/cb', 'https://b.example/cb?x=1'] };
  const clients = new Map([single, double].map((client) => [client.id, client]));
  const deps = {
    findClient: async (id: string) => clients.get(id) ?? null,
    endpoints,
  } satisfies Parameters<typeof checkAuthorizeRequest>[1];

  const good: AuthorizeParams = {
    response_type: 'code',
    client_id: single.id,
    redirect_uri: 'https://claude.ai/api/mcp/auth_callback',
    state: 'st-4 &=?',
    scope: 'claudeai',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    resource: endpoints.resource,
  };
  const check = (overrides: Partial<Record<keyof AuthorizeParams, string | undefined>>) => checkAuthorizeRequest({ ...good, ...overrides }, deps);

  function redirected(result: AuthorizeCheck): URL {
    if (result.kind !== 'redirect') throw new Error(`expected a redirect, got ${JSON.stringify(result)}`);
    return new URL(result.location);
  }

  describe('refuses without redirecting when the client or its address cannot be trusted', () => {
    it.each([
      ['no client_id', { client_id: undefined }, 'authorize: unknown client'],
      ['an unknown client', { client_id: 'pcgc_nobody' }, 'authorize: unknown client'],
      ['a client_id longer than 2000 characters', { client_id: `pcgc_${'x'.repeat(2000)}` }, 'authorize: unknown client'],
      ['a redirect_uri that was not registered', { redirect_uri: 'https://evil.example/cb' }, 'authorize: redirect_uri mismatch'],
      ['a missing redirect_uri when two were registered', { client_id: double.id, redirect_uri: undefined }, 'authorize: redirect_uri mismatch'],
    ])('%s', async (_label, overrides, denial) => {
      const result = await check(overrides);
      expect(result).toMatchObject({ kind: 'refused', denial });
    });

    it('gives the spec-fixed messages for an unknown client and a mismatched address', async () => {
      expect(await check({ client_id: 'pcgc_nobody' })).toMatchObject({ message: 'This client is not registered here. Start the connection again from your client so that it registers.' });
      expect(await check({ redirect_uri: 'https://evil.example/cb' })).toMatchObject({ message: 'redirect_uri is not one of the addresses this client registered.' });
    });

    it('checks the client before anything else, even a bad response_type', async () => {
      expect((await check({ client_id: 'pcgc_nobody', response_type: 'token' })).kind).toBe('refused');
      expect((await check({ redirect_uri: 'https://evil.example/cb', code_challenge_method: 'plain' })).kind).toBe('refused');
    });
  });

  it('uses the only registered redirect URI when none is given', async () => {
    const result = await check({ redirect_uri: undefined });
    expect(result.kind).toBe('ok');
    if (result.kind === 'ok') expect(result.request.redirectUri).toBe(single.redirectUris[0]);
  });

  describe('sends other errors back to the registered address', () => {
    it.each([
      ['response_type token', { response_type: 'token' }, 'unsupported_response_type'],
      ['no response_type', { response_type: undefined }, 'unsupported_response_type'],
      ['a code_challenge_method of plain', { code_challenge_method: 'plain' }, 'invalid_request'],
      ['no code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
      ['no code_challenge', { code_challenge: undefined }, 'invalid_request'],
      ['a code_challenge of 42 characters', { code_challenge: CHALLENGE.slice(0, 42) }, 'invalid_request'],
      ['a code_challenge with base64 padding', { code_challenge: `${CHALLENGE}=` }, 'invalid_request'],
      ['a state longer than 2000 characters', { state: 's'.repeat(2001) }, 'invalid_request'],
      ['a foreign resource', { resource: 'https://evil.example/mcp' }, 'invalid_target'],
      ['another path on our origin as resource', { resource: `${ORIGIN}/api` }, 'invalid_target'],
    ])('%s', async (_label, overrides, error) => {
      const location = redirected(await check(overrides));
      expect(location.origin + location.pathname).toBe('https://claude.ai/api/mcp/auth_callback');
      expect(location.searchParams.get('error')).toBe(error);
      expect(location.searchParams.get('error_description')).toBeTruthy();
      expect(location.searchParams.get('state')).toBe('state' in overrides ? overrides.state : good.state);
      expect(location.searchParams.get('iss')).toBe(endpoints.issuer);
      expect(location.searchParams.has('code')).toBe(false);
    });

    it.each(['plain', undefined, 's256'])('refuses code_challenge_method %s with the exact text of spec 7', async (method) => {
      const location = redirected(await check({ code_challenge_method: method }));
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('error_description')).toBe("code_challenge_method must be 'S256' (plain is not accepted)");
    });

    it('leaves state out when the client sent none, and still names the issuer', async () => {
      const location = redirected(await check({ state: undefined, response_type: 'token' }));
      expect(location.searchParams.has('state')).toBe(false);
      expect(location.searchParams.get('iss')).toBe(ORIGIN);
    });

    it('keeps the registered query and answers to the requested loopback port', async () => {
      const loopback: ClientRow = { ...single, id: 'pcgc_loop', redirectUris: ['http://127.0.0.1:9/cb?app=1'] };
      const result = await checkAuthorizeRequest(
        { ...good, client_id: loopback.id, redirect_uri: 'http://127.0.0.1:40000/cb?app=1', response_type: 'token' },
        { ...deps, findClient: async (id: string) => (id === loopback.id ? loopback : null) },
      );
      const location = redirected(result);
      expect(location.host).toBe('127.0.0.1:40000');
      expect(location.searchParams.get('app')).toBe('1');
      expect(location.searchParams.get('error')).toBe('unsupported_response_type');
    });
  });

  describe('accepts a sound request', () => {
    it('binding everything the code will carry', async () => {
      expect(await check({})).toEqual({
        kind: 'ok',
        client: single,
        request: {
          clientId: single.id,
          redirectUri: good.redirect_uri,
          codeChallenge: CHALLENGE,
          state: good.state,
          scope: good.scope,
          resource: endpoints.resource,
        },
      });
    });

    it.each([undefined, endpoints.resource, `${endpoints.resource}/`, ORIGIN, `${ORIGIN}/`])(
      'normalising resource %s to the bridge resource',
      async (resource) => {
        const result = await check({ resource });
        expect(result.kind).toBe('ok');
        if (result.kind === 'ok') expect(result.request.resource).toBe(`${ORIGIN}/mcp`);
      },
    );

    it('with null state and scope when the client sent none', async () => {
      const result = await check({ state: undefined, scope: undefined });
      expect(result.kind).toBe('ok');
      if (result.kind === 'ok') expect(result.request).toMatchObject({ state: null, scope: null });
    });
  });
});
