import { describe, expect, it } from 'vitest';
import { ClientRegistrationSchema, echoedMetadata, registrationAnswer } from '../../src/bridge/client-registration.ts';

const CLAUDE = {
  client_name: 'Claude',
  redirect_uris: ['https://claude.ai/api/mcp/auth_callback'],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
  scope: 'claudeai',
};
const withUris = (...redirect_uris: unknown[]) => ({ ...CLAUDE, redirect_uris });

/** The refusal messages of a body, or null when it was accepted. */
function problems(body: unknown): string[] | null {
  const result = ClientRegistrationSchema.safeParse(body);
  return result.success ? null : result.error.issues.map((issue) => issue.message);
}

function nullPaths(value: unknown, path = '$'): string[] {
  if (value === null || value === undefined) return [path];
  if (Array.isArray(value)) return value.flatMap((item, index) => nullPaths(item, `${path}[${index}]`));
  if (typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => nullPaths(item, `${path}.${key}`));
  return [];
}

describe('ClientRegistrationSchema accepts', () => {
  it('the body Claude sends', () => {
    const parsed = ClientRegistrationSchema.parse(CLAUDE);
    expect(parsed).toEqual(CLAUDE);
  });

  it('only redirect_uris, every other field being optional', () => {
    expect(problems({ redirect_uris: ['https://client.example/cb'] })).toBeNull();
  });

  it.each(['http://localhost:33418/callback', 'http://127.0.0.1:9/cb', 'http://[::1]:5000/cb', 'http://127.5.6.7/cb'])(
    'a loopback http redirect URI: %s',
    (uri) => {
      expect(problems(withUris(uri))).toBeNull();
    },
  );

  it('several redirect URIs at once', () => {
    expect(problems(withUris('https://client.example/cb', 'http://localhost:8080/cb'))).toBeNull();
  });
});

describe('ClientRegistrationSchema refuses, naming the problem', () => {
  it.each([
    ['missing redirect_uris', { client_name: 'x' }, 'redirect_uris'],
    ['an empty redirect_uris', withUris(), 'at least one'],
    ['redirect_uris that is not an array', { redirect_uris: 'https://client.example/cb' }, 'redirect_uris'],
    ['http to a host that is not loopback', withUris('http://example.com/cb'), 'http://example.com/cb'],
    ['a javascript: URI', withUris('javascript:alert(1)'), 'javascript:alert(1)'],
    ['a fragment', withUris('https://x.example/cb#frag'), 'fragment'],
    ['a username and password', withUris('https://user:pw@x.example/cb'), 'username or password'],
    ['a relative URI', withUris('/callback'), 'absolute'],
    ['a non-string entry', withUris(42), 'strings'],
    ['grant_types client_credentials', { ...CLAUDE, grant_types: ['client_credentials'] }, 'grant_types'],
    ['response_types token', { ...CLAUDE, response_types: ['token'] }, 'response_types'],
    ['a client_name that is not a string', { ...CLAUDE, client_name: 7 }, 'client_name'],
    ['an empty client_name', { ...CLAUDE, client_name: '' }, 'client_name'],
    ['a logo_uri that is not http(s)', { ...CLAUDE, logo_uri: 'ftp://x' }, 'logo_uri'],
    ['a body that is not an object', ['https://client.example/cb'], 'JSON object'],
  ])('%s', (_label, body, named) => {
    const messages = problems(body);
    expect(messages).not.toBeNull();
    expect(messages?.join('\n')).toContain(named);
  });

  it('names each bad redirect URI among good ones', () => {
    const messages = problems(withUris('https://ok.example/cb', 'http://example.com/cb', 'https://x.example/cb#frag'));
    expect(messages).toHaveLength(2);
    expect(messages?.[0]).toContain('http://example.com/cb');
    expect(messages?.[1]).toContain('https://x.example/cb#frag');
  });

  // RFC 8252 7.3: plain http is allowed only to a loopback IP literal or localhost. A DNS name that merely
  // begins with "127." is an ordinary host on the network, so the code would travel in clear text to it.
  it.each(['http://127.evil.example/cb', 'http://127.0.0.1.evil.example/cb'])('http to a DNS name that only starts with 127.: %s', (uri) => {
    expect(problems(withUris(uri))).not.toBeNull();
  });
});

describe('ClientRegistrationSchema leniency', () => {
  it('treats null optional fields as absent', () => {
    const optionalFields = ['client_name', 'grant_types', 'response_types', 'token_endpoint_auth_method', 'scope', 'client_uri', 'logo_uri', 'tos_uri', 'policy_uri', 'software_id', 'software_version', 'contacts'] as const;
    const body = { redirect_uris: ['https://client.example/cb'], ...Object.fromEntries(optionalFields.map((field) => [field, null])) };
    const parsed = ClientRegistrationSchema.parse(body);
    for (const field of optionalFields) expect(parsed[field], field).toBeUndefined();
    expect(echoedMetadata(parsed)).toEqual({});
  });

  it('ignores unknown fields', () => {
    const parsed = ClientRegistrationSchema.parse({ ...CLAUDE, jwks_uri: 'https://client.example/jwks', client_secret: 's', id: 1 });
    expect(Object.keys(parsed)).not.toContain('jwks_uri');
    expect(Object.keys(parsed)).not.toContain('client_secret');
    expect(Object.keys(parsed)).not.toContain('id');
  });
});

describe('registrationAnswer', () => {
  const createdAt = '2026-11-22T12:34:56.789Z';
  const answerFor = (body: unknown, clientName: string | null = null) => {
    const registration = ClientRegistrationSchema.parse(body);
    return registrationAnswer({
      id: 'pcgc_client',
      createdAt,
      clientName: clientName ?? registration.client_name ?? null,
      redirectUris: registration.redirect_uris,
      metadata: echoedMetadata(registration),
    });
  };

  it('holds no null or undefined, even when the client sent nulls', () => {
    const answer = answerFor({ redirect_uris: ['https://client.example/cb'], client_name: null, scope: null, logo_uri: null, contacts: null });
    expect(nullPaths(answer)).toEqual([]);
    expect(JSON.parse(JSON.stringify(answer))).toEqual(answer);
  });

  it('answers both grants and auth method none whatever the client asked', () => {
    const answer = answerFor({ ...CLAUDE, grant_types: ['authorization_code'], token_endpoint_auth_method: 'client_secret_basic' });
    expect(answer.grant_types).toEqual(['authorization_code', 'refresh_token']);
    expect(answer.response_types).toEqual(['code']);
    expect(answer.token_endpoint_auth_method).toBe('none');
  });

  it('omits client_name when the client gave none', () => {
    const answer = answerFor({ redirect_uris: ['https://client.example/cb'] });
    expect(Object.keys(answer)).not.toContain('client_name');
  });

  it('answers the registered name, id and redirect URIs', () => {
    const answer = answerFor(CLAUDE);
    expect(answer).toMatchObject({ client_id: 'pcgc_client', client_name: 'Claude', redirect_uris: CLAUDE.redirect_uris });
  });

  it('echoes the registered extras', () => {
    const extras = { scope: 'claudeai', client_uri: 'https://claude.ai', logo_uri: 'https://claude.ai/logo.png', software_id: 'claude', contacts: ['ops@claude.example'] };
    const answer = answerFor({ ...CLAUDE, ...extras });
    expect(answer).toMatchObject(extras);
  });

  it('gives client_id_issued_at in whole seconds since the epoch', () => {
    const answer = answerFor(CLAUDE);
    expect(Number.isInteger(answer.client_id_issued_at)).toBe(true);
    expect(answer.client_id_issued_at).toBe(Date.UTC(2026, 10, 22, 12, 34, 56) / 1000);
  });
});
