import { createHash, randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createCalendarPart } from './google-calendar.ts';
import { createGmailPart } from './google-gmail.ts';
import { googleError, readForm, sendJson, serviceDisabled, type GoogleApi } from './google-http.ts';
import { createPeoplePart } from './google-people.ts';

export const GOOGLE_DOUBLE_SUB = '109876543210987654321';
const CALENDAR = 'https://www.googleapis.com/auth/calendar.readonly';
const CONTACTS = 'https://www.googleapis.com/auth/contacts.readonly';
const GMAIL_METADATA = 'https://www.googleapis.com/auth/gmail.metadata';
const GMAIL_READONLY = 'https://www.googleapis.com/auth/gmail.readonly';
/** Google answers `email` with its full name, as its token answers do. */
const EXPANDED: Record<string, string> = { email: 'https://www.googleapis.com/auth/userinfo.email', profile: 'https://www.googleapis.com/auth/userinfo.profile' };

export type GoogleDoubleOptions = { clientId?: string; clientSecret?: string; port?: number };
type Fault = { prefix: string; status: number; reason: string; headers: Record<string, string>; remaining: number };

/**
 * A local Google for tests and the demo, on one origin (`GOOGLE_BASE_URL`): the OAuth server
 * (authorization code with PKCE S256, `access_type=offline`, refresh tokens that do not rotate, the
 * granted scopes as full names, narrowed by `state.deniedScopes` as a consent with unticked boxes),
 * OpenID userinfo (`sub`), Calendar v3, the People API and Gmail v1. Every API answers 401 for an unknown or
 * expired access token, 403 `insufficientPermissions` for a scope not granted, 403 `SERVICE_DISABLED`
 * for an API `state.disabledApis` holds, and the faults a test asks for (403 `rateLimitExceeded`, 429
 * with `Retry-After`, 5xx).
 */
export async function startGoogleDouble(options: GoogleDoubleOptions = {}) {
  const client = { clientId: options.clientId ?? 'google-client.apps.googleusercontent.com', clientSecret: options.clientSecret ?? 'google-secret' };
  const now = Date.now();
  let seq = 0;
  const tick = () => (seq += 1);
  const calendar = createCalendarPart({ now, tick });
  const people = createPeoplePart({ now, tick });
  const gmail = createGmailPart({ now });
  const codes = new Map<string, { redirectUri: string; scopes: string[]; challenge?: string }>();
  const access = new Map<string, string[]>();
  const refresh = new Map<string, string[]>();
  const faults: Fault[] = [];
  const state = {
    /** Scopes the consent leaves unticked (full names), as a person may at Google's consent screen. */
    deniedScopes: [] as string[],
    presentedRefreshTokens: [] as string[],
    refreshes: 0,
    unauthorized: 0,
    requests: [] as Array<{ path: string; query: URLSearchParams; at: number }>,
    /** Every API request (Gmail, Calendar, People) with the status and JSON body it was answered with, for the discovery checks. */
    exchanges: [] as Array<{ method: string; path: string; query: URLSearchParams; status: number; body: unknown }>,
    /** APIs not enabled in the Cloud project of the client id: each answers 403 `SERVICE_DISABLED` (see `serviceDisabled`). */
    disabledApis: new Set<GoogleApi>(),
  };
  const recordExchange = (res: ServerResponse, request: { method: string; path: string; query: URLSearchParams }) => {
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      const [chunk] = args;
      let body: unknown;
      try {
        body = typeof chunk === 'string' ? JSON.parse(chunk) : undefined;
      } catch {
        body = chunk;
      }
      state.exchanges.push({ ...request, status: res.statusCode, body });
      return end(...args);
    }) as ServerResponse['end'];
  };
  const issue = (kind: string) => `ya29.${kind}-${randomBytes(12).toString('base64url')}`;

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://double');
      const path = url.pathname;
      state.requests.push({ path, query: url.searchParams, at: Date.now() });
      if (/^\/(gmail|calendar|v1)\//.test(path)) recordExchange(res, { method: req.method ?? 'GET', path, query: url.searchParams });
      if (req.method === 'GET' && path === '/o/oauth2/v2/auth') {
        if (url.searchParams.get('client_id') !== client.clientId) return sendJson(res, 400, { error: 'invalid_client' });
        const redirectUri = url.searchParams.get('redirect_uri') ?? '';
        if (!url.searchParams.get('scope')) return sendJson(res, 400, { error: 'invalid_request', error_description: 'Missing required parameter: scope' });
        const asked = (url.searchParams.get('scope') ?? '').split(' ').filter(Boolean).map((scope) => EXPANDED[scope] ?? scope);
        const code = `4/${randomBytes(12).toString('base64url')}`;
        codes.set(code, { redirectUri, scopes: asked.filter((scope) => !state.deniedScopes.includes(scope)), challenge: url.searchParams.get('code_challenge') ?? undefined });
        const back = new URL(redirectUri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state') ?? '');
        res.writeHead(302, { location: back.toString() });
        return res.end();
      }
      if (req.method === 'POST' && path === '/token') {
        const form = await readForm(req);
        if (form.get('client_id') !== client.clientId || form.get('client_secret') !== client.clientSecret) return sendJson(res, 401, { error: 'invalid_client' });
        const tokens = (scopes: string[], withRefresh: boolean) => {
          const accessToken = issue('access');
          access.set(accessToken, scopes);
          const refreshToken = withRefresh ? `1//${randomBytes(16).toString('base64url')}` : undefined;
          if (refreshToken) refresh.set(refreshToken, scopes);
          return { access_token: accessToken, expires_in: 3599, scope: scopes.join(' '), token_type: 'Bearer', ...(refreshToken ? { refresh_token: refreshToken } : {}) };
        };
        if (form.get('grant_type') === 'authorization_code') {
          const pending = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? '');
          if (!pending || pending.redirectUri !== form.get('redirect_uri')) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Bad Request' });
          if (pending.challenge && createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') !== pending.challenge) {
            return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Invalid code verifier.' });
          }
          return sendJson(res, 200, tokens(pending.scopes, true));
        }
        if (form.get('grant_type') === 'refresh_token') {
          const presented = form.get('refresh_token') ?? '';
          state.presentedRefreshTokens.push(presented);
          const scopes = refresh.get(presented);
          if (!scopes) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
          state.refreshes += 1;
          // Google keeps the refresh token: the answer carries none.
          return sendJson(res, 200, tokens(scopes, false));
        }
        return sendJson(res, 400, { error: 'unsupported_grant_type' });
      }
      const fault = faults.find((candidate) => path.startsWith(candidate.prefix) && candidate.remaining > 0);
      if (fault) {
        fault.remaining -= 1;
        return googleError(res, fault.status, fault.reason, `fault ${fault.reason}`, { headers: fault.headers });
      }
      if (path.startsWith('/gmail/v1/users/me/messages/') && gmail.state.expireAccessTokensAtGet === gmail.state.gets + 1) {
        gmail.state.expireAccessTokensAtGet = undefined;
        access.clear();
      }
      const scopes = access.get((req.headers.authorization ?? '').replace(/^Bearer /i, ''));
      const needs = path.startsWith('/calendar/') ? [CALENDAR] : path.startsWith('/v1/people') ? [CONTACTS] : path.startsWith('/gmail/') ? [GMAIL_METADATA, GMAIL_READONLY] : path === '/oauth2/v3/userinfo' ? ['openid'] : undefined;
      if (!needs) return googleError(res, 404, 'notFound', 'Not Found');
      if (!scopes) {
        state.unauthorized += 1;
        return googleError(res, 401, 'authError', 'Request had invalid authentication credentials.', { status: 'UNAUTHENTICATED' });
      }
      const api: GoogleApi | undefined = path.startsWith('/calendar/') ? 'calendar' : path.startsWith('/v1/people') ? 'people' : path.startsWith('/gmail/') ? 'gmail' : undefined;
      if (api && state.disabledApis.has(api)) return serviceDisabled(res, api);
      if (!needs.some((scope) => scopes.includes(scope))) return googleError(res, 403, 'insufficientPermissions', 'Request had insufficient authentication scopes.', { status: 'PERMISSION_DENIED' });
      if (path === '/oauth2/v3/userinfo') return sendJson(res, 200, { sub: GOOGLE_DOUBLE_SUB, email: 'demo.person@example.com', email_verified: true });
      if (calendar.routes(res, path, url.searchParams) || people.routes(res, path, url.searchParams)) return;
      const mail = gmail.routes(res, path, url.searchParams, !scopes.includes(GMAIL_READONLY));
      if (mail !== false) return void (await mail);
      return googleError(res, 404, 'notFound', 'Not Found');
    })();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    client,
    state,
    calendar,
    people,
    gmail,
    expireAccessTokens: () => access.clear(),
    revokeGrant: () => refresh.clear(),
    /** The next `times` requests under `prefix` answer `status` with Google's error body naming `reason`. */
    failNext(prefix: string, status: number, fault: { reason?: string; times?: number; headers?: Record<string, string> } = {}) {
      faults.push({ prefix, status, reason: fault.reason ?? 'backendError', headers: fault.headers ?? {}, remaining: fault.times ?? 1 });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type GoogleDouble = Awaited<ReturnType<typeof startGoogleDouble>>;
