import { randomBytes } from 'node:crypto';
import { renderContact, renderEvent, renderMessage } from './graph-render.ts';
import { dayMs } from './graph-time.ts';

/** The id of the double's primary calendar (the one `calendarView/delta` reads). */
export const PRIMARY_CALENDAR = 'calendar-primary';
/** The id of the double's default contact folder (the one `/me/contacts` lists). */
export const DEFAULT_CONTACT_FOLDER = 'contacts-default';

/** One calendar event as the double keeps it: a single event, an occurrence or exception of a series, or the series master. */
export type GraphOccurrence = {
  id: string;
  subject: string;
  /** Timed events: instants (ms). */
  start?: number;
  end?: number;
  /** All-day events: local dates, end exclusive. */
  startDate?: string;
  endDate?: string;
  type: 'singleInstance' | 'occurrence' | 'exception' | 'seriesMaster';
  seriesMasterId?: string;
  /** The occurrence's slot in its series (ms), for occurrences and exceptions. */
  originalStart?: number;
  /** A series master: the end (ms) of its last occurrence, so the master is in a window its series touches. */
  seriesEnd?: number;
  /** The calendar holding the event; the primary one when absent. */
  calendarId?: string;
  /** The Windows zone the event was created in (`originalStartTimeZone`); Pacific Standard Time when absent. */
  timeZone?: string;
  isCancelled?: boolean;
  location?: string;
  organizer?: { name: string; address: string };
  attendees?: Array<{ name: string; address: string; response: string }>;
};

export type GraphMessage = {
  id: string;
  parentFolderId: string;
  subject: string;
  from: { name: string; address: string };
  to: Array<{ name: string; address: string }>;
  cc?: Array<{ name: string; address: string }>;
  receivedDateTime: string;
  isRead?: boolean;
  hasAttachments?: boolean;
  conversationId?: string;
  categories?: string[];
  /** Never to be fetched: the connector's `$select` must leave it out. */
  body?: string;
};

export type GraphContact = {
  id: string;
  displayName: string;
  /** The contact folder; the default one when absent. */
  parentFolderId?: string;
  givenName?: string;
  surname?: string;
  companyName?: string;
  jobTitle?: string;
  emailAddresses?: Array<{ name?: string; address: string }>;
  mobilePhone?: string;
  businessPhones?: string[];
  birthday?: string;
  homeAddress?: { street?: string; city?: string; postalCode?: string; countryOrRegion?: string };
};

type Kind = 'event' | 'message' | 'contact';
type Entry = { kind: Kind; id: string; data: GraphOccurrence | GraphMessage | GraphContact; seq: number; removed: boolean; movedFrom?: string };
/** What a list or delta round covers: a calendar's window, one mail folder (or search folder), or one contact folder. */
export type Scope =
  | { kind: 'event'; start: number; end: number; calendarId: string }
  | { kind: 'message'; folderId: string; matches?: (message: GraphMessage) => boolean }
  | { kind: 'contact'; folderId: string };
/** How items are rendered: the `Prefer: outlook.timezone` zone, `$select`, and whether this is a delta round (stripped occurrences). */
export type Render = { zone: string; select: string[] | undefined; delta: boolean };
type Round = { scope: Scope; since: number; render: Render };
type Paging = { rows: unknown[]; offset: number; next: Round };

function eventSpan(event: GraphOccurrence): [number, number] {
  if (event.startDate) return [dayMs(event.startDate), dayMs(event.endDate ?? event.startDate)];
  return [event.start ?? 0, event.type === 'seriesMaster' ? (event.seriesEnd ?? event.end ?? 0) : (event.end ?? 0)];
}

function inScope(entry: Entry, scope: Scope): boolean {
  if (entry.kind !== scope.kind) return false;
  if (scope.kind === 'message') {
    const message = entry.data as GraphMessage;
    return scope.matches ? scope.matches(message) : message.parentFolderId === scope.folderId;
  }
  if (scope.kind === 'contact') return ((entry.data as GraphContact).parentFolderId ?? DEFAULT_CONTACT_FOLDER) === scope.folderId;
  const event = entry.data as GraphOccurrence;
  if ((event.calendarId ?? PRIMARY_CALENDAR) !== scope.calendarId) return false;
  const [start, end] = eventSpan(event);
  return start < scope.end && end > scope.start;
}

/**
 * The double's mailbox: events, messages and contacts, each change stamped with a sequence number, and
 * the delta rounds of reference §6.2 over them: an initial round lists what is in scope, a round from a
 * deltaLink lists what changed since (full items) and what left (`@removed`); pages are served from a
 * snapshot taken when the round began, linked by `$skiptoken`, the last with a `$deltatoken`. Tokens live
 * only in the double's memory: an unknown one (forged, or after `expireDeltaTokens`) is refused.
 */
export function createGraphStore() {
  const entries = new Map<string, Entry>();
  const deltaTokens = new Map<string, Round>();
  const skipTokens = new Map<string, Paging>();
  let seq = 0;
  const token = () => randomBytes(16).toString('base64url');

  function put(kind: Kind, data: Entry['data'], movedFrom?: string): void {
    seq += 1;
    entries.set(`${kind}:${data.id}`, { kind, id: data.id, data, seq, removed: false, ...(movedFrom ? { movedFrom } : {}) });
  }
  /** Changes an item's data without listing it as changed (what the source does not report as a change). */
  function amend(kind: Kind, data: Entry['data']): void {
    const entry = entries.get(`${kind}:${data.id}`);
    if (!entry) throw new Error(`the double holds no ${kind} '${data.id}'`);
    entries.set(`${kind}:${data.id}`, { ...entry, data });
  }
  function remove(kind: Kind, id: string): void {
    const entry = entries.get(`${kind}:${id}`);
    if (!entry) throw new Error(`the double holds no ${kind} '${id}'`);
    seq += 1;
    entries.set(`${kind}:${id}`, { ...entry, seq, removed: true });
  }
  const find = <T extends Entry['data']>(kind: Kind, id: string): T | undefined => {
    const entry = entries.get(`${kind}:${id}`);
    return !entry || entry.removed ? undefined : (entry.data as T);
  };
  const get = <T extends Entry['data']>(kind: Kind, id: string): T => {
    const found = find<T>(kind, id);
    if (!found) throw new Error(`the double holds no ${kind} '${id}'`);
    return found;
  };
  /** The series master of an occurrence, for rendering the occurrence with the series' fields. */
  const masterOf = (event: GraphOccurrence) => (event.seriesMasterId ? find<GraphOccurrence>('event', event.seriesMasterId) : undefined);

  function render(entry: Entry, how: Render): unknown {
    if (entry.kind === 'event') {
      const event = entry.data as GraphOccurrence;
      return renderEvent(event, masterOf(event), how);
    }
    if (entry.kind === 'message') return renderMessage(entry.data as GraphMessage, how.select);
    return renderContact(entry.data as GraphContact);
  }

  function rowsOf(round: Round): unknown[] {
    const rows: unknown[] = [];
    for (const entry of entries.values()) {
      if (entry.kind !== round.scope.kind || entry.seq <= round.since) continue;
      const was = round.since > 0;
      if (!entry.removed && inScope(entry, round.scope)) rows.push(render(entry, round.render));
      // An event changed or made outside the round's window comes as `@removed` with the reason `deleted`, as
      // a deleted one does (microsoftgraph/microsoft-graph-docs issue 6599: a calendarView delta answer listing
      // a new event outside the window as removed, reason=deleted). A message moved out of the folder has the
      // reason `changed` (a guess: reference §6.2 leaves the reasons unconfirmed).
      else if (was && (entry.removed || entry.kind === 'event' || entry.movedFrom === (round.scope as { folderId?: string }).folderId)) {
        rows.push({ id: entry.id, '@removed': { reason: entry.removed || entry.kind === 'event' ? 'deleted' : 'changed' } });
      }
    }
    return rows;
  }

  return {
    put,
    amend,
    remove,
    get,
    find,
    /** Every live item in a scope, rendered (a plain list, not a delta round). */
    list: (scope: Scope, how: Render) => [...entries.values()].filter((entry) => !entry.removed && inScope(entry, scope)).map((entry) => render(entry, how)),
    /** Begins a round: from scratch (`scope`), or from a deltaLink's token; undefined for an unknown token. */
    begin(from: { scope: Scope; render: Render } | { deltaToken: string }): Paging | undefined {
      const round = 'deltaToken' in from ? deltaTokens.get(from.deltaToken) : { scope: from.scope, since: 0, render: from.render };
      if (!round) return undefined;
      return { rows: rowsOf(round), offset: 0, next: { ...round, since: seq } };
    },
    /** A plain list served in pages like a round's, without a deltaLink at the end. */
    beginList: (rows: unknown[], scope: Scope, how: Render): Paging => ({ rows, offset: 0, next: { scope, since: seq, render: how } }),
    /** A page of the round, and the token of the next page or of the next round. */
    page(paging: Paging, size: number): { value: unknown[]; skipToken?: string; deltaToken?: string } {
      const value = paging.rows.slice(paging.offset, paging.offset + size);
      if (paging.offset + size < paging.rows.length) {
        const skip = token();
        skipTokens.set(skip, { ...paging, offset: paging.offset + size });
        return { value, skipToken: skip };
      }
      const delta = token();
      deltaTokens.set(delta, paging.next);
      return { value, deltaToken: delta };
    },
    resume: (skipToken: string) => skipTokens.get(skipToken),
    /** Every delta and skip token is forgotten: the next use of one is refused (sync state not found). */
    expireDeltaTokens(): void {
      deltaTokens.clear();
      skipTokens.clear();
    },
    /** Live (not removed) entries of a kind, for assertions. */
    live: (kind: Kind) => [...entries.values()].filter((entry) => entry.kind === kind && !entry.removed).map((entry) => entry.data),
  };
}

export type GraphStore = ReturnType<typeof createGraphStore>;
