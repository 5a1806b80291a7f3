import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { whoopDay, WHOOP_USER_ID, type WhoopRecoveryRecord, type WhoopSleepRecord, type WhoopWorkoutRecord } from './whoop-fixtures.ts';

/**
 * A local WHOOP (reference §3) for tests and the demo: its OAuth server (authorization code, refresh
 * tokens that rotate — the old one is refused at once — and a granted scope list the test narrows) and
 * the v2 API: collections sorted by start descending, `limit` at most 25, `start` inclusive, `end`
 * exclusive, an opaque `nextToken` query parameter answered by a `next_token` body field, scopes
 * enforced per collection, mixed `score_state`s, and 429 with the three `X-RateLimit-*` headers.
 *
 * Sources, cited at each behaviour: [WH-OAS] WHOOP's OpenAPI file (archived as api-evangelist/whoop @19793ec
 * `openapi/_original/whoop-openapi.yml`, a copy of https://api.prod.whoop.com/developer/doc/openapi.json);
 * [WH-OAUTH] https://developer.whoop.com/docs/developing/oauth and its refresh-token tutorials; [WH-RL]
 * https://developer.whoop.com/docs/developing/rate-limiting/; providers.md §3.x. A behaviour none of them
 * settles is marked `guess:`.
 */
export type WhoopDoubleOptions = { clientId?: string; clientSecret?: string; port?: number; days?: number };

type Fault = { prefix: string; status: number; headers: Record<string, string>; remaining: number };

export async function startWhoopDouble(options: WhoopDoubleOptions = {}) {
  const client = { clientId: options.clientId ?? 'whoop-client', clientSecret: options.clientSecret ?? 'whoop-secret' };
  const codes = new Map<string, { redirectUri: string; scopes: string[] }>();
  const access = new Map<string, string[]>();
  const refresh = new Map<string, string[]>();
  const sleeps = new Map<string, WhoopSleepRecord>();
  const workouts = new Map<string, WhoopWorkoutRecord>();
  const recoveries = new Map<number, WhoopRecoveryRecord>();
  const faults: Fault[] = [];
  const state = {
    grantedScopes: ['offline', 'read:recovery', 'read:sleep', 'read:workout', 'read:profile'],
    /** Every refresh token presented to `/token`, in order, accepted or not. */
    presentedRefreshTokens: [] as string[],
    refreshes: 0,
    unauthorized: 0,
    requests: [] as Array<{ path: string; query: URLSearchParams; at: number }>,
  };
  /**
   * [WH-RL] providers.md §3.4: 100 requests a minute and 10,000 a day per client, over either a 429 with
   * `X-RateLimit-Limit: 100, 100;window=60, 10000;window=86400`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`
   * (seconds), which the double sends on the 429 only (where the page shows them). guess: Remaining and Reset
   * follow the tighter window, and a refused request does not count.
   */
  const apiCalls: number[] = [];
  function countCall(): { limited: boolean; headers: Record<string, string> } {
    const now = Date.now();
    while (apiCalls.length > 0 && now - (apiCalls[0] ?? now) >= 86_400_000) apiCalls.shift();
    const lastMinute = apiCalls.filter((at) => now - at < 60_000);
    const limited = lastMinute.length >= 100 || apiCalls.length >= 10_000;
    if (!limited) apiCalls.push(now);
    const minuteLeft = 100 - lastMinute.length - (limited ? 0 : 1);
    const dayLeft = 10_000 - apiCalls.length;
    const byDay = dayLeft < minuteLeft;
    const oldest = (byDay ? apiCalls[0] : lastMinute[0]) ?? now;
    const reset = Math.max(0, Math.ceil((oldest + (byDay ? 86_400_000 : 60_000) - now) / 1000));
    return { limited, headers: { 'x-ratelimit-limit': '100, 100;window=60, 10000;window=86400', 'x-ratelimit-remaining': String(Math.max(0, byDay ? dayLeft : minuteLeft)), 'x-ratelimit-reset': String(reset) } };
  }
  const issue = (kind: string) => `whoop-${kind}-${randomBytes(12).toString('base64url')}`;
  const now = Date.now();
  for (let day = 0; day < (options.days ?? 10); day += 1) addDay(day, { scored: day > 0 });

  function addDay(daysAgo: number, dayOptions: { scored?: boolean } = {}) {
    const { sleep, recovery, workout } = whoopDay(now, daysAgo, dayOptions);
    sleeps.set(sleep.id, sleep);
    workouts.set(workout.id, workout);
    recoveries.set(recovery.cycle_id, recovery);
    return { sleep, recovery, workout };
  }

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const readForm = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  };
  /** [WH-OAUTH] providers.md §3.1: the token answer echoes the granted scopes space-separated; `expires_in` 3600. */
  const tokens = (scopes: string[]) => {
    const accessToken = issue('access');
    access.set(accessToken, scopes);
    // Only `offline` earns a refresh token (reference §3.1).
    const refreshToken = scopes.includes('offline') ? issue('refresh') : undefined;
    if (refreshToken) refresh.set(refreshToken, scopes);
    return { access_token: accessToken, ...(refreshToken ? { refresh_token: refreshToken } : {}), expires_in: 3600, scope: scopes.join(' '), token_type: 'bearer' };
  };

  /**
   * Collections [WH-OAS] (getSleepCollection, getWorkoutCollection, getRecoveryCollection): sorted by start
   * descending; `limit` default 10, maximum 25; `start` returns records "that occurred after or during
   * (inclusive) this time" (so one still under way at `start` is included), `end` those "that intersect this time
   * or ended before (exclusive)", defaulting to now; `nextToken` (query) pages, `next_token` (body) is absent on the
   * last page. Out-of-range values are "400 Client error constructing the request". guess: the 400's body, a
   * `limit` below 1 refused, and the token's form (opaque).
   */
  function page<T>(res: ServerResponse, query: URLSearchParams, items: T[], intervalOf: (item: T) => { start: string; end?: string }) {
    const limit = Number(query.get('limit') ?? '10');
    if (!Number.isInteger(limit) || limit < 1 || limit > 25) return json(res, 400, { message: 'limit must be between 1 and 25' });
    const from = query.get('start') ? Date.parse(query.get('start') ?? '') : -Infinity;
    const to = query.get('end') ? Date.parse(query.get('end') ?? '') : Date.now();
    if (Number.isNaN(from) || Number.isNaN(to)) return json(res, 400, { message: 'start and end must be date-times' });
    const startOf = (item: T) => Date.parse(intervalOf(item).start);
    const endOf = (item: T) => Date.parse(intervalOf(item).end ?? '') || Infinity;
    const matching = items.filter((item) => endOf(item) >= from && startOf(item) < to).sort((a, b) => startOf(b) - startOf(a));
    const offset = query.get('nextToken') ? Number(Buffer.from(query.get('nextToken') ?? '', 'base64url').toString('utf8').replace(/^offset:/, '')) : 0;
    if (!Number.isInteger(offset) || offset < 0) return json(res, 400, { message: 'invalid nextToken' });
    const slice = matching.slice(offset, offset + limit);
    const more = offset + limit < matching.length;
    return json(res, 200, { records: slice, ...(more ? { next_token: Buffer.from(`offset:${offset + limit}`).toString('base64url') } : {}) });
  }

  const COLLECTIONS: Record<string, { scope: string; serve: (res: ServerResponse, query: URLSearchParams) => void }> = {
    '/developer/v2/activity/sleep': { scope: 'read:sleep', serve: (res, q) => page(res, q, [...sleeps.values()], (s) => s) },
    '/developer/v2/activity/workout': { scope: 'read:workout', serve: (res, q) => page(res, q, [...workouts.values()], (w) => w) },
    '/developer/v2/recovery': {
      scope: 'read:recovery',
      // [WH-OAS] getRecoveryCollection: "sorted by start time of the related sleep"; guess: filtered by that sleep's interval too.
      serve: (res, q) => page(res, q, [...recoveries.values()], (r) => sleeps.get(r.sleep_id) ?? { start: r.created_at }),
    },
    // [WH-OAS] /v2/user/profile/basic (read:profile).
    '/developer/v2/user/profile/basic': {
      scope: 'read:profile',
      serve: (res) => json(res, 200, { user_id: WHOOP_USER_ID, email: 'demo.runner@example.com', first_name: 'Demo', last_name: 'Runner' }),
    },
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://double');
      state.requests.push({ path: url.pathname, query: url.searchParams, at: Date.now() });
      // [WH-OAUTH] authorization code flow at /oauth/oauth2/auth, `state` returned as given. guess: no consent page (the
      // person accepts at once) and an unknown client is a 400 `invalid_client`.
      if (req.method === 'GET' && url.pathname === '/oauth/oauth2/auth') {
        if (url.searchParams.get('client_id') !== client.clientId) return json(res, 400, { error: 'invalid_client' });
        const redirectUri = url.searchParams.get('redirect_uri') ?? '';
        const code = issue('code');
        codes.set(code, { redirectUri, scopes: [...state.grantedScopes] });
        const back = new URL(redirectUri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state') ?? '');
        res.writeHead(302, { location: back.toString() });
        return res.end();
      }
      // [WH-OAUTH] form-encoded POST; refresh with `grant_type=refresh_token` and `scope=offline`, answering a new
      // refresh token. guess: the old refresh token stops working at once (providers.md §3.1: "unconfirmed"), and the
      // OAuth error bodies (RFC 6749 §5.2 names).
      if (req.method === 'POST' && url.pathname === '/oauth/oauth2/token') {
        const form = await readForm(req);
        if (form.get('client_id') !== client.clientId || form.get('client_secret') !== client.clientSecret) return json(res, 401, { error: 'invalid_client' });
        if (form.get('grant_type') === 'authorization_code') {
          const pending = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? '');
          if (!pending || pending.redirectUri !== form.get('redirect_uri')) return json(res, 400, { error: 'invalid_grant' });
          return json(res, 200, tokens(pending.scopes));
        }
        if (form.get('grant_type') === 'refresh_token') {
          const presented = form.get('refresh_token') ?? '';
          state.presentedRefreshTokens.push(presented);
          const scopes = refresh.get(presented);
          // Rotation: a refresh token works once.
          if (!scopes || !refresh.delete(presented)) return json(res, 400, { error: 'invalid_grant', error_description: 'refresh token revoked or already used' });
          if (form.get('scope') !== 'offline') return json(res, 400, { error: 'invalid_scope', error_description: 'refresh requires scope=offline' });
          state.refreshes += 1;
          return json(res, 200, tokens(scopes));
        }
        return json(res, 400, { error: 'unsupported_grant_type' });
      }
      const collection = req.method === 'GET' ? COLLECTIONS[url.pathname] : undefined;
      if (!collection) return json(res, 404, { message: 'not found' });
      const fault = faults.find((candidate) => url.pathname.startsWith(candidate.prefix) && candidate.remaining > 0);
      if (fault) {
        fault.remaining -= 1;
        return json(res, fault.status, { message: `fault ${fault.status}` }, fault.headers);
      }
      // [WH-OAS]: "401 Invalid authorization"; every collection names its OAuth scope. guess: a token without that
      // scope is a 403 (the file lists no status for it, providers.md §3.4 calls it unconfirmed); the bodies.
      const scopes = access.get((req.headers.authorization ?? '').replace(/^Bearer /i, ''));
      if (!scopes) {
        state.unauthorized += 1;
        return json(res, 401, { message: 'Authorization was not valid' });
      }
      if (!scopes.includes(collection.scope)) return json(res, 403, { message: `missing scope ${collection.scope}` });
      const rate = countCall();
      if (rate.limited) return json(res, 429, { message: 'Too Many Requests' }, rate.headers);
      return collection.serve(res, url.searchParams);
    })();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    client,
    state,
    /** Adds (or replaces) the day `daysAgo` days back: a sleep, its recovery and a workout. */
    addDay,
    sleeps,
    workouts,
    recoveries,
    /** Every access token stops working (they expired). */
    expireAccessTokens: () => access.clear(),
    /** The person revoked the app: every refresh is `invalid_grant`. */
    revokeGrant: () => refresh.clear(),
    /** The next `times` requests under `prefix` answer `status` with `headers`. */
    failNext(prefix: string, status: number, fault: { times?: number; headers?: Record<string, string> } = {}) {
      faults.push({ prefix, status, headers: fault.headers ?? {}, remaining: fault.times ?? 1 });
    },
    /** WHOOP's own 429 ([WH-RL], providers.md §3.4): the three rate-limit headers, the reset in seconds. */
    rateLimitNext(prefix: string, resetSeconds: number) {
      faults.push({ prefix, status: 429, headers: { 'x-ratelimit-limit': '100, 100;window=60, 10000;window=86400', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(resetSeconds) }, remaining: 1 });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type WhoopDouble = Awaited<ReturnType<typeof startWhoopDouble>>;
