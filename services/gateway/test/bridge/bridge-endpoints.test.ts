import { describe, expect, it } from 'vitest';
import {
  ACCESS_TOKEN_SECONDS,
  authorizationServerMetadata,
  bearerChallenge,
  bridgeEndpoints,
  protectedResourceMetadata,
} from '../../src/bridge/bridge-endpoints.ts';

const ORIGINS = ['https://pcg.example.com', 'http://127.0.0.1:8788'];

/** Every path in `value` that holds null or undefined. */
function nullPaths(value: unknown, path = '$'): string[] {
  if (value === null || value === undefined) return [path];
  if (Array.isArray(value)) return value.flatMap((item, index) => nullPaths(item, `${path}[${index}]`));
  if (typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => nullPaths(item, `${path}.${key}`));
  return [];
}

describe('nullPaths (the helper the null checks rely on)', () => {
  it('finds nulls at any depth', () => {
    expect(nullPaths({ a: 1, b: [{ c: null }], d: { e: undefined } })).toEqual(['$.b[0].c', '$.d.e']);
  });
});

describe.each(ORIGINS)('bridge endpoints of %s', (origin) => {
  const endpoints = bridgeEndpoints(origin);

  it('names <origin>/mcp as the resource and the origin itself as the issuer', () => {
    expect(endpoints.origin).toBe(origin);
    expect(endpoints.resource).toBe(`${origin}/mcp`);
    expect(endpoints.issuer).toBe(origin);
    expect(endpoints.protectedResourceMetadata).toBe(`${origin}/.well-known/oauth-protected-resource/mcp`);
  });

  it('advertises exactly the values of spec 4.3 in the authorization server metadata', () => {
    const metadata = authorizationServerMetadata(endpoints);
    expect(metadata.issuer).toBe(origin);
    expect(metadata.response_types_supported).toEqual(['code']);
    expect(metadata.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(['none']);
  });

  it('places every endpoint on the saved origin', () => {
    const metadata = authorizationServerMetadata(endpoints);
    expect(metadata.authorization_endpoint).toBe(`${origin}/authorize`);
    expect(metadata.token_endpoint).toBe(`${origin}/token`);
    expect(metadata.registration_endpoint).toBe(`${origin}/register`);
    for (const url of [metadata.authorization_endpoint, metadata.token_endpoint, metadata.registration_endpoint]) {
      expect(new URL(url).origin).toBe(origin);
    }
  });

  it('puts no null anywhere in either document', () => {
    expect(nullPaths(authorizationServerMetadata(endpoints))).toEqual([]);
    expect(nullPaths(protectedResourceMetadata(endpoints, 'Personal Context Gateway'))).toEqual([]);
  });

  it('names the resource and this issuer in the protected-resource document', () => {
    const metadata = protectedResourceMetadata(endpoints, 'Personal Context Gateway');
    expect(metadata.resource).toBe(endpoints.resource);
    expect(`${origin}/mcp`.startsWith(metadata.resource)).toBe(true);
    expect(metadata.authorization_servers).toEqual([origin]);
    expect(metadata.resource_name).toBe('Personal Context Gateway');
  });

  it('challenges a request with no credential without an error code (RFC 6750 3.1)', () => {
    const challenge = bearerChallenge(endpoints);
    expect(challenge.startsWith('Bearer ')).toBe(true);
    expect(challenge).toContain(`resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`);
    expect(challenge).not.toContain('error=');
    expect(challenge).not.toContain('error_description=');
  });

  it('challenges a refused credential with invalid_token and the description', () => {
    const challenge = bearerChallenge(endpoints, { description: 'token expired' });
    expect(challenge.startsWith('Bearer ')).toBe(true);
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain('error_description="token expired"');
    expect(challenge).toContain(`resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`);
  });
});

describe('bearerChallenge quoting', () => {
  it('escapes a quote and a backslash in the description (RFC 7230 quoted-string)', () => {
    const challenge = bearerChallenge(bridgeEndpoints('https://pcg.example.com'), { description: 'say "no" \\ now' });
    expect(challenge).toContain('error_description="say \\"no\\" \\\\ now"');
  });
});

describe('token lifetime', () => {
  it('is 3600 seconds (spec 4.3, 8)', () => {
    expect(ACCESS_TOKEN_SECONDS).toBe(3600);
  });
});
