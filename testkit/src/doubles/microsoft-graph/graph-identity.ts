import { createHash, randomBytes } from 'node:crypto';

/** Every token and code the double issues starts with this, so a test can look for any of them in logs and rows. */
export const GRAPH_SECRET_PREFIX = 'SENTINEL-graph-';

type PendingCode = { clientId: string; redirectUri: string; challenge: string | undefined; scopes: string[] };
type Answer = { status: number; body: unknown };

const canonical = (scope: string) => scope.replace(/^https:\/\/graph\.microsoft\.com\//i, '');
const oauthError = (error: string, description: string): Answer => ({ status: 400, body: { error, error_description: description, error_codes: [70000] } });

/**
 * The identity platform's v2 authorize and token endpoints as reference §6.1 describes them: the
 * consent grants what the user ticked (`consent`, narrower than asked when set), the token answer's
 * `scope` never echoes `offline_access`, a refresh token only with `offline_access`, and refresh
 * tokens rotate: the one presented stops working. A refresh may ask for scopes again and gets at most
 * what was consented.
 */
export function createGraphIdentity(client: { clientId: string; clientSecret: string }) {
  const codes = new Map<string, PendingCode>();
  const access = new Map<string, { scopes: string[] }>();
  const refresh = new Map<string, { scopes: string[] }>();
  const state = {
    /** What the next consent grants; undefined grants everything asked. */
    consent: undefined as string[] | undefined,
    /** The account's object id (the ID token's `oid`, Graph's user `id`) and its tenant (`tid`; the consumer tenant here). */
    accountId: '00000000-0000-0000-0066-a1b2c3d4e5f6',
    tenantId: '9188040d-6c67-4c5b-b112-36a304b66dad',
    mail: 'ada@contoso.example',
    refreshes: 0,
    /** Every refresh token ever presented, in order (to prove an old one is never sent again). */
    presentedRefreshTokens: [] as string[],
    lastRefreshScope: undefined as string | undefined,
  };
  const issue = (kind: string) => `${GRAPH_SECRET_PREFIX}${kind}-${randomBytes(12).toString('base64url')}`;

  /**
   * The ID token the token endpoint adds when `openid` was granted (identity platform, "OpenID Connect
   * scopes" and "ID token claims reference"): `aud` the client id, `iss` the tenant's v2.0 issuer, `tid`,
   * the pairwise `sub`; `oid`, `name` and `preferred_username` only with the `profile` scope ("the
   * `profile` scope is required to receive this claim"). Signed with a key nobody checks: a client that
   * receives it straight from the token endpoint over TLS may skip the signature (OIDC Core 3.1.3.7).
   */
  function idToken(scopes: string[]): string {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const claims: Record<string, unknown> = {
      aud: client.clientId,
      iss: `https://login.microsoftonline.com/${state.tenantId}/v2.0`,
      iat: now,
      nbf: now,
      exp: now + 3600,
      tid: state.tenantId,
      sub: createHash('sha256').update(`${client.clientId}:${state.accountId}`).digest('base64url'),
      ver: '2.0',
    };
    if (scopes.includes('profile')) Object.assign(claims, { oid: state.accountId, name: 'Ada Lovelace', preferred_username: state.mail });
    return `${part({ typ: 'JWT', alg: 'RS256', kid: 'double' })}.${part(claims)}.${randomBytes(32).toString('base64url')}`;
  }

  function tokens(scopes: string[]) {
    const accessToken = issue('access');
    access.set(accessToken, { scopes: scopes.filter((scope) => scope !== 'offline_access') });
    const answer: Record<string, unknown> = {
      token_type: 'Bearer',
      // As observed: granted names, short form, without offline_access.
      scope: scopes.filter((scope) => scope !== 'offline_access').join(' '),
      expires_in: 3600,
      ext_expires_in: 3600,
      access_token: accessToken,
    };
    if (scopes.includes('openid')) answer.id_token = idToken(scopes);
    if (scopes.includes('offline_access')) {
      const refreshToken = issue('refresh');
      refresh.set(refreshToken, { scopes });
      answer.refresh_token = refreshToken;
    }
    return answer;
  }

  return {
    state,
    /** GET …/oauth2/v2.0/authorize: consent at once and send the browser back with a code. */
    authorize(query: URLSearchParams): { location: string } | Answer {
      if (query.get('client_id') !== client.clientId) return oauthError('unauthorized_client', 'AADSTS700016: application not found');
      const asked = (query.get('scope') ?? '').split(' ').filter(Boolean).map(canonical);
      const granted = state.consent ? asked.filter((scope) => state.consent?.includes(scope)) : asked;
      const code = issue('code');
      codes.set(code, { clientId: client.clientId, redirectUri: query.get('redirect_uri') ?? '', challenge: query.get('code_challenge') ?? undefined, scopes: granted });
      const back = new URL(query.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', query.get('state') ?? '');
      return { location: back.toString() };
    },
    /** POST …/oauth2/v2.0/token: a code exchange or a refresh. */
    token(form: URLSearchParams): Answer {
      if (form.get('client_id') !== client.clientId || form.get('client_secret') !== client.clientSecret) {
        return { status: 401, body: { error: 'invalid_client', error_description: 'AADSTS7000215: invalid client secret' } };
      }
      if (form.get('grant_type') === 'authorization_code') {
        const pending = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        const pkceOk = pending?.challenge === undefined || createHash('sha256').update(verifier).digest('base64url') === pending.challenge;
        if (!pending || pending.redirectUri !== form.get('redirect_uri') || !pkceOk) return oauthError('invalid_grant', 'AADSTS70008: the code has expired or was used');
        return { status: 200, body: tokens(pending.scopes) };
      }
      if (form.get('grant_type') === 'refresh_token') {
        const presented = form.get('refresh_token') ?? '';
        state.presentedRefreshTokens.push(presented);
        state.lastRefreshScope = form.get('scope') ?? undefined;
        const grant = refresh.get(presented);
        if (!grant) return oauthError('invalid_grant', 'AADSTS70000: the refresh token was revoked or rotated out');
        refresh.delete(presented);
        state.refreshes += 1;
        const asked = (form.get('scope') ?? grant.scopes.join(' ')).split(' ').filter(Boolean).map(canonical);
        return { status: 200, body: tokens(asked.filter((scope) => grant.scopes.includes(scope))) };
      }
      return oauthError('unsupported_grant_type', 'AADSTS70003');
    },
    /** The scopes of a bearer token, or undefined when the token is unknown or expired. */
    scopesOf(authorization: string | undefined): string[] | undefined {
      return access.get((authorization ?? '').replace(/^Bearer /i, ''))?.scopes;
    },
    /** Every access token stops working, as after its hour. */
    expireAccessTokens: () => access.clear(),
    /** The user removed the app's consent: every refresh is `invalid_grant`. */
    revokeConsent: () => refresh.clear(),
  };
}

export type GraphIdentity = ReturnType<typeof createGraphIdentity>;
