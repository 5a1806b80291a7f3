import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GRAPH_CALENDARS, GRAPH_CONTACT_FOLDERS, GRAPH_FOLDERS, MAIL_ROOT, renderFolder, searchMatches, type GraphCalendar, type GraphContactFolder, type GraphFolder } from './graph-folders.ts';
import { createGraphIdentity } from './graph-identity.ts';
import { createGraphStore, DEFAULT_CONTACT_FOLDER, PRIMARY_CALENDAR, type GraphOccurrence, type Render, type Scope } from './graph-store.ts';
import { preferredPageSize, preferredZone } from './graph-time.ts';

export { GRAPH_FOLDERS } from './graph-folders.ts';
export type GraphRequest = { method: string; path: string; query: URLSearchParams; prefer: string | undefined; at: number };
type Fault = { match: RegExp; status: number; retryAfter?: string; code: string; remaining: number };

const DAY = 86_400_000;
const preferOf = (req: IncomingMessage): string | undefined => [req.headers.prefer ?? []].flat().join(', ') || undefined;
const WEEK = 7 * DAY;

/**
 * A local Microsoft Graph (reference §6) for tests and the demo: the identity platform's authorize and
 * token endpoints under `/common/oauth2/v2.0/` (narrowable consent, rotating refresh tokens, scope echo
 * without `offline_access`, an ID token with `openid`), and under `/v1.0/`: `/me` (only with
 * `User.Read`), mail folders and their child folders (search folders among them), the per-folder
 * message delta, calendars, `calendarView/delta` of the primary calendar (series rendered as Graph does:
 * the master and stripped occurrences), each calendar's `calendarView`, events and their instances,
 * contact folders and the per-folder contacts delta. OData paging with absolute `@odata.nextLink` /
 * `@odata.deltaLink` URLs, `Prefer: odata.maxpagesize`, `@removed` rows, the refusal of an expired
 * delta token, 401 for an unknown access token, 403 for a scope not granted, and faults (429/503 with
 * `Retry-After`) switched on per path.
 */
export async function startGraphDouble(client: { clientId: string; clientSecret: string } = { clientId: 'demo-client', clientSecret: 'demo-secret' }, options: { port?: number } = {}) {
  const identity = createGraphIdentity(client);
  const store = createGraphStore();
  const requests: GraphRequest[] = [];
  const faults: Fault[] = [];
  const folders: GraphFolder[] = [...GRAPH_FOLDERS];
  const calendars: GraphCalendar[] = [...GRAPH_CALENDARS];
  const contactFolders: GraphContactFolder[] = [...GRAPH_CONTACT_FOLDERS];
  const state = {
    /**
     * Graph serves at most this many items a page whatever `odata.maxpagesize` asks ("The number of
     * objects in each page can vary", delta query overview, Optional query parameters); default no cap.
     */
    pageCap: undefined as number | undefined,
    /**
     * How an expired delta token is refused. `expired` (the default): "a 40X-series error with error codes
     * such as `syncStateNotFound`" (delta query overview, Token duration), sent by Outlook's calendarView
     * delta as 410 Gone with the code `SyncStateNotFound` and "The sync state generation is not found; …"
     * (a real answer to `/calendarView/delta?$deltatoken=…`: microsoftgraph/microsoft-graph-docs issue 2350).
     * `reset`: "410 (gone) and a Location header" with the initial query (same page, Synchronization reset).
     */
    tokenRefusal: 'expired' as 'expired' | 'reset',
  };
  let base = '';

  /** Answers; true, so a route handler can say it answered (undefined: no route matched). */
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): true => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
    return true;
  };
  const graphError = (res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}) =>
    json(res, status, { error: { code, message, innerError: { 'request-id': 'double', date: new Date().toISOString().slice(0, 19) } } }, headers);
  const readForm = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  };
  const pageSize = (prefer: string | undefined) => Math.min(preferredPageSize(prefer, 10), state.pageCap ?? Number.MAX_SAFE_INTEGER);
  const renderOf = (prefer: string | undefined, query: URLSearchParams, delta: boolean): Render => ({
    zone: preferredZone(prefer),
    select: query.get('$select')?.split(',').map((name) => name.trim()),
    delta,
  });

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
      paging = store.begin({ scope: fresh, render: renderOf(prefer, query, true) });
    }
    if (!paging) {
      if (state.tokenRefusal === 'reset') return graphError(res, 410, 'resyncRequired', 'The sync state must be reset.', { location: `${base}${path}` });
      return graphError(res, 410, 'SyncStateNotFound', 'The sync state generation is not found; generation=1;[highest=2][2].');
    }
    const page = store.page(paging, pageSize(prefer));
    const link = page.skipToken ? { '@odata.nextLink': `${base}${path}?$skiptoken=${page.skipToken}` } : { '@odata.deltaLink': `${base}${path}?$deltatoken=${page.deltaToken}` };
    return json(res, 200, { '@odata.context': `${base}/v1.0/$metadata`, value: page.value, ...link });
  }

  /** A plain list in pages (`$skiptoken` links, no deltaLink at the end): calendarView, instances, /me/contacts. */
  function list(res: ServerResponse, path: string, query: URLSearchParams, prefer: string | undefined, rows: () => unknown[]) {
    const skip = query.get('$skiptoken');
    const paging = skip === null ? store.beginList(rows(), { kind: 'contact', folderId: '' }, renderOf(prefer, query, false)) : store.resume(skip);
    if (!paging) return graphError(res, 400, 'BadRequest', 'The skip token is not valid.');
    const top = Number(query.get('$top'));
    const page = store.page(paging, Math.min(top > 0 ? top : preferredPageSize(prefer, 10), state.pageCap ?? Number.MAX_SAFE_INTEGER));
    return json(res, 200, { value: page.value, ...(page.skipToken ? { '@odata.nextLink': `${base}${path}?$skiptoken=${page.skipToken}` } : {}) });
  }

  /** user-list-calendarview and event-delta: `startDateTime` and `endDateTime` are required; the 400's message is Graph's (reference §6.2). */
  function window(query: URLSearchParams): { start: number; end: number } | string {
    const start = Date.parse(query.get('startDateTime') ?? '');
    const end = Date.parse(query.get('endDateTime') ?? '');
    if (Number.isNaN(start) || Number.isNaN(end)) return 'This request requires a time window specified by the query string parameters StartDateTime and EndDateTime.';
    return { start, end };
  }
  const calendarScope = (query: URLSearchParams, calendarId: string): Scope | string => {
    const span = window(query);
    return typeof span === 'string' ? span : { kind: 'event', ...span, calendarId };
  };

  const needs = (scopes: string[], scope: string) => scopes.includes(scope);
  const children = <T extends { parentFolderId: string; isHidden?: boolean }>(all: readonly T[], parent: string, hidden: boolean) =>
    all.filter((folder) => folder.parentFolderId === parent && (hidden || !folder.isHidden));

  function calendarApi(res: ServerResponse, path: string, query: URLSearchParams, prefer: string | undefined) {
    // Get calendar: `/me/calendar` is the user's primary calendar (calendar-get).
    if (path === '/v1.0/me/calendar') return json(res, 200, calendars.find((calendar) => calendar.isDefaultCalendar) ?? calendars[0]);
    if (path === '/v1.0/me/calendars') return json(res, 200, { value: calendars.map((calendar) => ({ ...calendar, canEdit: true, owner: { name: 'Ada Lovelace', address: identity.state.mail } })) });
    // event: delta — "events … in a calendarView … of the user's primary calendar" (event-delta, v1.0).
    if (path === '/v1.0/me/calendarView/delta') return delta(res, path, query, prefer, () => calendarScope(query, PRIMARY_CALENDAR));
    const view = /^\/v1\.0\/me\/calendars\/([^/]+)\/calendarView$/.exec(path)?.[1];
    if (view !== undefined) {
      if (!calendars.some((calendar) => calendar.id === view)) return graphError(res, 404, 'ErrorItemNotFound', 'The specified object was not found in the store.');
      // A nextLink carries the window in its skip token, as Graph's opaque links do.
      if (query.has('$skiptoken')) return list(res, path, query, prefer, () => []);
      const scope = calendarScope(query, view);
      if (typeof scope === 'string') return graphError(res, 400, 'ErrorInvalidParameter', scope);
      return list(res, path, query, prefer, () => store.list(scope, renderOf(prefer, query, false)));
    }
    const [, eventId, instances] = /^\/v1\.0\/me\/events\/([^/]+)(\/instances)?$/.exec(path) ?? [];
    if (eventId === undefined) return undefined;
    const event = store.find<GraphOccurrence>('event', eventId);
    if (!event) return graphError(res, 404, 'ErrorItemNotFound', 'The specified object was not found in the store.');
    if (instances && query.has('$skiptoken')) return list(res, path, query, prefer, () => []);
    if (!instances) return json(res, 200, store.list({ kind: 'event', start: -Infinity, end: Infinity, calendarId: event.calendarId ?? PRIMARY_CALENDAR }, renderOf(prefer, query, false)).find((row) => (row as { id: string }).id === eventId));
    const span = window(query);
    if (typeof span === 'string') return graphError(res, 400, 'ErrorInvalidParameter', span);
    const all = store.list({ kind: 'event', ...span, calendarId: event.calendarId ?? PRIMARY_CALENDAR }, renderOf(prefer, query, false)) as Array<{ seriesMasterId?: string | null; type: string }>;
    return list(res, path, query, prefer, () => all.filter((row) => row.seriesMasterId === eventId && row.type !== 'seriesMaster'));
  }

  function contactsApi(res: ServerResponse, path: string, query: URLSearchParams, prefer: string | undefined) {
    // List contactFolders: the folders in the user's default Contacts folder (user-list-contactfolders).
    if (path === '/v1.0/me/contactFolders') return json(res, 200, { value: children(contactFolders, DEFAULT_CONTACT_FOLDER, false) });
    const kids = /^\/v1\.0\/me\/contactFolders\/([^/]+)\/childFolders$/.exec(path)?.[1];
    if (kids !== undefined) return json(res, 200, { value: children(contactFolders, kids, false) });
    // List contacts: "from the default contacts folder of the signed-in user" (user-list-contacts).
    if (path === '/v1.0/me/contacts') return list(res, path, query, prefer, () => store.list({ kind: 'contact', folderId: DEFAULT_CONTACT_FOLDER }, renderOf(prefer, query, false)));
    const folder = /^\/v1\.0\/me\/contactFolders\/([^/]+)\/contacts\/delta$/.exec(path)?.[1];
    if (folder === undefined) return undefined;
    if (folder !== DEFAULT_CONTACT_FOLDER && !contactFolders.some((known) => known.id === folder)) return graphError(res, 404, 'ErrorItemNotFound', 'The specified object was not found in the store.');
    return delta(res, path, query, prefer, () => ({ kind: 'contact', folderId: folder }));
  }

  function mailApi(res: ServerResponse, path: string, query: URLSearchParams, prefer: string | undefined) {
    const hidden = query.get('includeHiddenFolders') === 'true';
    // List mailFolders / childFolders (mailfolder-list, mailfolder-list-childfolders): hidden folders only with includeHiddenFolders=true.
    if (path === '/v1.0/me/mailFolders') return json(res, 200, { value: children(folders, MAIL_ROOT, hidden).map((folder) => renderFolder(folder, folders)) });
    const kids = /^\/v1\.0\/me\/mailFolders\/([^/]+)\/childFolders$/.exec(path)?.[1];
    if (kids !== undefined) return json(res, 200, { value: children(folders, kids, hidden).map((folder) => renderFolder(folder, folders)) });
    const folderId = /^\/v1\.0\/me\/mailFolders\/([^/]+)\/messages\/delta$/.exec(path)?.[1];
    if (folderId === undefined) return undefined;
    const folder = folders.find((known) => known.id === folderId);
    if (!folder) return graphError(res, 404, 'ErrorItemNotFound', 'The specified object was not found in the store.');
    return delta(res, path, query, prefer, () => ({ kind: 'message', folderId, ...(folder.search ? { matches: searchMatches(folder) } : {}) }));
  }

  function api(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) {
    const scopes = identity.scopesOf(req.headers.authorization);
    if (!scopes) return graphError(res, 401, 'InvalidAuthenticationToken', 'Access token has expired or is not yet valid.');
    const prefer = preferOf(req);
    const denied = () => graphError(res, 403, 'ErrorAccessDenied', 'Access is denied. Check credentials and try again.');
    if (path === '/v1.0/me') {
      // Get user: the least privileged delegated permission is User.Read (user-get, Permissions).
      if (!needs(scopes, 'User.Read')) return graphError(res, 403, 'Authorization_RequestDenied', 'Insufficient privileges to complete the operation.');
      return json(res, 200, { id: identity.state.accountId, mail: identity.state.mail, userPrincipalName: identity.state.mail, displayName: 'Ada Lovelace' });
    }
    // The delegated permissions each API page lists (Permissions table: least privileged first, then higher):
    // calendarView, event delta, calendar list and get: Calendars.ReadBasic, Calendars.Read, Calendars.ReadWrite
    // (reference §6.1); contactFolder and contact delta: Contacts.Read, Contacts.ReadWrite; mailFolder list and
    // message delta: Mail.ReadBasic, Mail.Read, Mail.ReadWrite. Anything else is 403 ErrorAccessDenied.
    const grants = (any: string[]) => any.some((scope) => needs(scopes, scope));
    if (path.startsWith('/v1.0/me/calendar') || path.startsWith('/v1.0/me/events/')) return grants(['Calendars.ReadBasic', 'Calendars.Read', 'Calendars.ReadWrite']) ? (calendarApi(res, path, query, prefer) ?? notFound(res, path)) : denied();
    if (path.startsWith('/v1.0/me/contact')) return grants(['Contacts.Read', 'Contacts.ReadWrite']) ? (contactsApi(res, path, query, prefer) ?? notFound(res, path)) : denied();
    if (path.startsWith('/v1.0/me/mailFolders')) return grants(['Mail.ReadBasic', 'Mail.Read', 'Mail.ReadWrite']) ? (mailApi(res, path, query, prefer) ?? notFound(res, path)) : denied();
    return notFound(res, path);
  }
  // `/me/contacts/delta` is answered by the real service but documented nowhere (reference §6.2): not served here.
  const notFound = (res: ServerResponse, path: string) => graphError(res, 400, 'BadRequest', `Resource not found for the segment '${path.split('/').pop() ?? ''}'.`);

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
    state,
    requests,
    folders,
    calendars,
    contactFolders,
    /**
     * A weekly series of `count` occurrences from `first` (ms), each `minutes` long: its master (the
     * first occurrence's times, as Graph sends it) put after the occurrences, and the occurrences, whose
     * ids it returns in order. Occurrence ids are stable, as Graph's are. `allDay` makes each occurrence
     * the day of its start (UTC date).
     */
    addWeeklySeries(id: string, subject: string, first: number, count: number, minutes = 30, extra: Partial<GraphOccurrence> & { allDay?: boolean } = {}): string[] {
      const { allDay, ...fields } = extra;
      const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
      const times = (start: number) => (allDay ? { startDate: day(start), endDate: day(start + DAY) } : { start, end: start + minutes * 60_000 });
      const ids = Array.from({ length: count }, (_, index) => {
        const start = first + index * WEEK;
        const occurrence: GraphOccurrence = { ...fields, id: `${id}-occ-${index}`, subject, ...times(start), type: 'occurrence', seriesMasterId: id, originalStart: start };
        store.put('event', occurrence);
        return occurrence.id;
      });
      const last = first + (count - 1) * WEEK;
      store.put('event', { ...fields, id, subject, ...times(first), type: 'seriesMaster', seriesEnd: allDay ? first + count * WEEK : last + minutes * 60_000 });
      return ids;
    },
    /**
     * The series' title changes: the master is listed as changed; its occurrences are not (whether Graph
     * lists them again is not documented: a guess that it does not, the harder case for a client).
     */
    renameSeries(id: string, subject: string): void {
      store.put('event', { ...store.get<GraphOccurrence>('event', id), subject });
      for (const event of store.live('event') as GraphOccurrence[]) if (event.seriesMasterId === id && event.type === 'occurrence') store.amend('event', { ...event, subject });
    },
    /** One occurrence moved to `start`: it becomes an exception, keeping its id and its original slot. */
    moveOccurrence(id: string, start: number): void {
      const occurrence = store.get<GraphOccurrence>('event', id);
      const length = (occurrence.end ?? 0) - (occurrence.start ?? 0);
      store.put('event', { ...occurrence, type: 'exception', start, end: start + length });
    },
    /** Every delta token is forgotten; the next use of one is refused the given way. */
    expireDeltaTokens(how: 'expired' | 'reset' = 'expired'): void {
      state.tokenRefusal = how;
      store.expireDeltaTokens();
    },
    /** Fails the next `times` requests whose path matches, with Graph's error body (and `Retry-After`). */
    failNext(match: RegExp, status: number, options: { retryAfter?: string; times?: number; code?: string } = {}): void {
      faults.push({ match, status, retryAfter: options.retryAfter, code: options.code ?? (status === 429 ? 'TooManyRequests' : 'ServiceUnavailable'), remaining: options.times ?? 1 });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type GraphDouble = Awaited<ReturnType<typeof startGraphDouble>>;
