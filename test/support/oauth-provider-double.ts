import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Every token and code the double issues starts with this, so a test can look for any of them in logs and rows. */
export const DOUBLE_SECRET_PREFIX = 'SENTINEL-oauth-';

type Client = { clientId: string; clientSecret: string };
/** A token endpoint answer a test scripts for the next refresh request, instead of the tokens. */
export type TokenFailure = { status: number; body?: Record<string, string>; retryAfter?: string };
type PendingCode = { redirectUri: string; challenge: string | undefined; scopes: string[] };

/**
 * A test OAuth provider (authorization code with PKCE S256, refresh with rotation, `invalid_grant`), and
 * one protected API. Test code only: it never ships in a service.
 * - `GET /authorize` issues a code and redirects to the client's redirect URI with the state;
 * - `POST /token` exchanges a code (checking client, redirect URI and PKCE) or a refresh token (rotated:
 *   the old one stops working), granting `grantedScopes`; a refresh request first takes the next
 *   scripted `TokenFailure`, if any;
 * - `GET /me` names the account; `GET /items` is the API, 401 for an unknown or expired token.
 */
export async function startOAuthProviderDouble(registered: Client) {
  const client = { ...registered };
  const codes = new Map<string, PendingCode>();
  const accessTokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const state = {
    /** The scope list `/token` reports as granted. */
    grantedScopes: [] as string[],
    accountId: 'account-1',
    /** How long `/token` takes to answer a refresh, to make two refreshes overlap. */
    refreshDelayMs: 0,
    /** Refreshes answered with new tokens. */
    refreshes: 0,
    /** Every refresh request, however it was answered. */
    refreshRequests: 0,
    /** Answers for the next refresh requests, taken in order (see `TokenFailure`). */
    tokenFailures: [] as TokenFailure[],
    unauthorized: 0,
    lastAuthorize: undefined as URLSearchParams | undefined,
  };
  /** While set, refreshes wait for it before answering (see `holdRefreshes`). */
  let gate: Promise<void> | undefined;
  const issue = (kind: string) => `${DOUBLE_SECRET_PREFIX}${kind}-${randomBytes(12).toString('base64url')}`;

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const bearer = (req: IncomingMessage) => (req.headers.authorization ?? '').replace(/^Bearer /, '');
  const readForm = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  };
  const tokens = (scopes: string[]) => {
    const access = issue('access');
    const refresh = issue('refresh');
    accessTokens.add(access);
    refreshTokens.add(refresh);
    return { access_token: access, refresh_token: refresh, expires_in: 3600, token_type: 'Bearer', scope: scopes.join(' ') };
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://double');
      if (req.method === 'GET' && url.pathname === '/authorize') {
        state.lastAuthorize = url.searchParams;
        const redirectUri = url.searchParams.get('redirect_uri') ?? '';
        if (url.searchParams.get('client_id') !== client.clientId) return json(res, 400, { error: 'invalid_client' });
        const code = issue('code');
        codes.set(code, { redirectUri, challenge: url.searchParams.get('code_challenge') ?? undefined, scopes: [...state.grantedScopes] });
        const back = new URL(redirectUri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state') ?? '');
        res.writeHead(302, { location: back.toString() });
        return res.end();
      }
      if (req.method === 'POST' && url.pathname === '/token') {
        const form = await readForm(req);
        if (form.get('grant_type') === 'refresh_token') {
          state.refreshRequests += 1;
          const failure = state.tokenFailures.shift();
          if (failure) {
            res.writeHead(failure.status, { 'content-type': 'application/json', ...(failure.retryAfter ? { 'retry-after': failure.retryAfter } : {}) });
            return res.end(failure.body ? JSON.stringify(failure.body) : '');
          }
        }
        // RFC 6749 5.2: a client that fails authentication (an unknown id, a wrong or expired secret) is
        // `invalid_client`, which the server may answer with 401; Microsoft answers 401 with the
        // secret's AADSTS code (AADSTS7000215 wrong, AADSTS7000222 expired) in `error_description`.
        if (form.get('client_id') !== client.clientId || form.get('client_secret') !== client.clientSecret) {
          return json(res, 401, { error: 'invalid_client', error_description: 'AADSTS7000222: The provided client secret keys are expired.' });
        }
        if (form.get('grant_type') === 'authorization_code') {
          const pending = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? '');
          const verifier = form.get('code_verifier') ?? '';
          const pkceOk = pending?.challenge === undefined || createHash('sha256').update(verifier).digest('base64url') === pending.challenge;
          if (!pending || pending.redirectUri !== form.get('redirect_uri') || !pkceOk) return json(res, 400, { error: 'invalid_grant' });
          return json(res, 200, tokens(pending.scopes));
        }
        if (form.get('grant_type') === 'refresh_token') {
          const presented = form.get('refresh_token') ?? '';
          if (!refreshTokens.delete(presented)) return json(res, 400, { error: 'invalid_grant', error_description: 'refresh token revoked or rotated out' });
          state.refreshes += 1;
          await new Promise((resolve) => setTimeout(resolve, state.refreshDelayMs));
          await gate;
          return json(res, 200, tokens(state.grantedScopes));
        }
        return json(res, 400, { error: 'unsupported_grant_type' });
      }
      if (req.method === 'GET' && (url.pathname === '/me' || url.pathname === '/items')) {
        if (!accessTokens.has(bearer(req))) {
          state.unauthorized += 1;
          return json(res, 401, { error: 'invalid_token' });
        }
        return url.pathname === '/me' ? json(res, 200, { id: state.accountId }) : json(res, 200, { items: [{ id: 'item-1', title: 'First' }, { id: 'item-2', title: 'Second' }] });
      }
      return json(res, 404, { error: 'not_found' });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    state,
    /** Every access token stops working (they expired). */
    expireAccessTokens: () => accessTokens.clear(),
    /** The operator revoked the app at the provider: every refresh is `invalid_grant`. */
    revokeGrant: () => refreshTokens.clear(),
    /** Refreshes (already rotated) wait to answer until the returned function is called. */
    holdRefreshes: () => {
      let release = () => {};
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      return () => {
        gate = undefined;
        release();
      };
    },
    /** The app's secret expired and a new one was made at the provider: only `secret` is accepted from now on; grants are kept. */
    replaceClientSecret: (secret: string) => {
      client.clientSecret = secret;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type OAuthProviderDouble = Awaited<ReturnType<typeof startOAuthProviderDouble>>;
