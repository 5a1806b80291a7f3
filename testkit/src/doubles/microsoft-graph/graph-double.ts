import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGraphIdentity } from './graph-identity.ts';
import { createGraphStore, type GraphOccurrence, type Scope } from './graph-store.ts';
import { preferredPageSize, preferredZone } from './graph-time.ts';

export type GraphRequest = { method: string; path: string; query: URLSearchParams; prefer: string | undefined; at: number };
type Fault = { match: RegExp; status: number; retryAfter?: string; code: string; remaining: number };

/** The mail folders of the double's mailbox (well-known names as ids, as Graph accepts them). */
export const GRAPH_FOLDERS = [
  { id: 'inbox', displayName: 'Inbox' },
  { id: 'sentitems', displayName: 'Sent Items' },
] as const;

const DAY = 86_400_000;
const preferOf = (req: IncomingMessage): string | undefined => [req.headers.prefer ?? []].flat().join(', ') || undefined;
const WEEK = 7 * DAY;

/**
 * A local Microsoft Graph (reference §6) for tests and the demo: the identity platform's authorize and
 * token endpoints under `/common/oauth2/v2.0/` (narrowable consent, rotating refresh tokens, scope echo
 * without `offline_access`), and under `/v1.0/`: `/me`, `/me/mailFolders`, the per-folder message delta,
 * `calendarView/delta` (a window fixed by the first request, series expanded into occurrences, the
 * `Prefer: outlook.timezone` zone, all-day events as floating midnights) and the contacts delta.
 * OData paging with absolute `@odata.nextLink`/`@odata.deltaLink` URLs, `Prefer: odata.maxpagesize`,
 * `@removed` rows, 410 for an unknown delta token, 401 for an unknown access token, 403 for a scope not
 * granted, and faults (429/503 with `Retry-After`) switched on per path.
 */
export async function startGraphDouble(client: { clientId: string; clientSecret: string } = { clientId: 'demo-client', clientSecret: 'demo-secret' }, options: { port?: number } = {}) {
  const identity = createGraphIdentity(client);
  const store = createGraphStore();
  const requests: GraphRequest[] = [];
  const faults: Fault[] = [];
  let base = '';

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const graphError = (res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}) =>
    json(res, status, { error: { code, message, innerError: { 'request-id': 'double', date: new Date().toISOString().slice(0, 19) } } }, headers);
  const readForm = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  };

  /** One delta round's page: a fresh round from `scope`, or a replay of `$skiptoken` / `$deltatoken`. */
  function delta(res: ServerResponse, path: string, query: URLSearchParams, prefer: string | undefined, scope: () => Scope | string) {
    const skip = query.get('$skiptoken');
    const deltaToken = query.get('$deltatoken');
    let paging;
    if (skip !== null) paging = store.resume(skip);
    else if (deltaToken !== null) paging = store.begin({ deltaToken });
    else {
      const fresh = scope();
      if (typeof fresh === 'string') return graphError(res, 400, 'ErrorInvalidParameter', fresh);
      const select = query.get('$select')?.split(',').map((name) => name.trim());
      paging = store.begin({ scope: fresh, render: { zone: preferredZone(prefer), select } });
    }
    if (!paging) return graphError(res, 410, 'SyncStateNotFound', 'The sync state generation is not found.');
    const page = store.page(paging, preferredPageSize(prefer, 10));
    const link = page.skipToken ? { '@odata.nextLink': `${base}${path}?$skiptoken=${page.skipToken}` } : { '@odata.deltaLink': `${base}${path}?$deltatoken=${page.deltaToken}` };
    return json(res, 200, { '@odata.context': `${base}/v1.0/$metadata`, value: page.value, ...link });
  }

  function calendarScope(query: URLSearchParams): Scope | string {
    const start = Date.parse(query.get('startDateTime') ?? '');
    const end = Date.parse(query.get('endDateTime') ?? '');
    if (Number.isNaN(start) || Number.isNaN(end)) return 'This request requires a time window specified by the query string parameters StartDateTime and EndDateTime.';
    return { kind: 'event', start, end };
  }

  const needs = (scopes: string[], scope: string) => scopes.includes(scope);

  function api(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) {
    const scopes = identity.scopesOf(req.headers.authorization);
    if (!scopes) return graphError(res, 401, 'InvalidAuthenticationToken', 'Access token has expired or is not yet valid.');
    const prefer = preferOf(req);
    const denied = () => graphError(res, 403, 'ErrorAccessDenied', 'Access is denied. Check credentials and try again.');
    if (path === '/v1.0/me') return json(res, 200, { id: identity.state.accountId, mail: identity.state.mail, userPrincipalName: identity.state.mail, displayName: 'Ada Lovelace' });
    if (path === '/v1.0/me/calendarView/delta') return needs(scopes, 'Calendars.Read') ? delta(res, path, query, prefer, () => calendarScope(query)) : denied();
    if (path === '/v1.0/me/contacts/delta') return needs(scopes, 'Contacts.Read') ? delta(res, path, query, prefer, () => ({ kind: 'contact' })) : denied();
    if (!needs(scopes, 'Mail.Read') && path.startsWith('/v1.0/me/mailFolders')) return denied();
    if (path === '/v1.0/me/mailFolders') return json(res, 200, { value: GRAPH_FOLDERS.map((folder) => ({ ...folder, totalItemCount: 0 })) });
    const folder = /^\/v1\.0\/me\/mailFolders\/([^/]+)\/messages\/delta$/.exec(path)?.[1];
    if (folder !== undefined) {
      if (!GRAPH_FOLDERS.some((known) => known.id === folder)) return graphError(res, 404, 'ErrorItemNotFound', 'The specified object was not found in the store.');
      return delta(res, path, query, prefer, () => ({ kind: 'message', folderId: folder }));
    }
    return graphError(res, 404, 'BadRequest', `Resource not found for the segment '${path}'.`);
  }

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://double');
      const path = decodeURIComponent(url.pathname);
      requests.push({ method: req.method ?? 'GET', path, query: url.searchParams, prefer: preferOf(req), at: Date.now() });
      const fault = faults.find((candidate) => candidate.match.test(path) && candidate.remaining > 0);
      if (fault) {
        fault.remaining -= 1;
        return graphError(res, fault.status, fault.code, 'Application is over its MailboxConcurrency limit.', fault.retryAfter ? { 'retry-after': fault.retryAfter } : {});
      }
      if (req.method === 'GET' && path === '/common/oauth2/v2.0/authorize') {
        const answer = identity.authorize(url.searchParams);
        if ('location' in answer) {
          res.writeHead(302, { location: answer.location });
          return res.end();
        }
        return json(res, answer.status, answer.body);
      }
      if (req.method === 'POST' && path === '/common/oauth2/v2.0/token') {
        const answer = identity.token(await readForm(req));
        return json(res, answer.status, answer.body);
      }
      if (req.method === 'GET' && path.startsWith('/v1.0/')) return api(req, res, path, url.searchParams);
      return graphError(res, 404, 'NotFound', 'not found');
    })();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  base = url;

  return {
    url,
    /** `MICROSOFT_LOGIN_BASE_URL` and `MICROSOFT_GRAPH_BASE_URL` pointing here (one origin serves both). */
    env: { MICROSOFT_LOGIN_BASE_URL: url, MICROSOFT_GRAPH_BASE_URL: url },
    client,
    identity,
    store,
    requests,
    /**
     * A weekly series of `count` occurrences from `first` (ms), each `minutes` long; returns the
     * occurrence ids, in order. Occurrence ids are stable, as Graph's are.
     */
    addWeeklySeries(id: string, subject: string, first: number, count: number, minutes = 30): string[] {
      return Array.from({ length: count }, (_, index) => {
        const start = first + index * WEEK;
        const occurrence: GraphOccurrence = { id: `${id}-occ-${index}`, subject, start, end: start + minutes * 60_000, type: 'occurrence', seriesMasterId: id, originalStart: start };
        store.put('event', occurrence);
        return occurrence.id;
      });
    },
    /** One occurrence moved to `start`: it becomes an exception, keeping its id and its original slot. */
    moveOccurrence(id: string, start: number): void {
      const occurrence = store.get<GraphOccurrence>('event', id);
      const length = (occurrence.end ?? 0) - (occurrence.start ?? 0);
      store.put('event', { ...occurrence, type: 'exception', start, end: start + length });
    },
    /** Fails the next `times` requests whose path matches, with Graph's error body (and `Retry-After`). */
    failNext(match: RegExp, status: number, options: { retryAfter?: string; times?: number; code?: string } = {}): void {
      faults.push({ match, status, retryAfter: options.retryAfter, code: options.code ?? (status === 429 ? 'TooManyRequests' : 'ServiceUnavailable'), remaining: options.times ?? 1 });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type GraphDouble = Awaited<ReturnType<typeof startGraphDouble>>;
