import { randomBytes } from 'node:crypto';
import { allDayTimeZone, dateTimeTimeZone, dayMs } from './graph-time.ts';

/** One calendar occurrence as the double keeps it (calendarView expands series into these). */
export type GraphOccurrence = {
  id: string;
  subject: string;
  /** Timed events: instants (ms). */
  start?: number;
  end?: number;
  /** All-day events: local dates, end exclusive. */
  startDate?: string;
  endDate?: string;
  type: 'singleInstance' | 'occurrence' | 'exception';
  seriesMasterId?: string;
  /** The occurrence's slot in its series (ms), for occurrences and exceptions. */
  originalStart?: number;
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
/** What a delta round covers: the calendar window, one mail folder, or the contacts. */
export type Scope = { kind: 'event'; start: number; end: number } | { kind: 'message'; folderId: string } | { kind: 'contact' };
type Render = { zone: string; select: string[] | undefined };
type Round = { scope: Scope; since: number; render: Render };
type Paging = { rows: unknown[]; offset: number; next: Round };

const email = (person: { name?: string; address: string }) => ({ emailAddress: { name: person.name ?? person.address, address: person.address } });

function inScope(entry: Entry, scope: Scope): boolean {
  if (entry.kind !== scope.kind) return false;
  if (scope.kind === 'message') return (entry.data as GraphMessage).parentFolderId === scope.folderId;
  if (scope.kind === 'event') {
    const event = entry.data as GraphOccurrence;
    const [start, end] = event.startDate ? [dayMs(event.startDate), dayMs(event.endDate ?? event.startDate)] : [event.start ?? 0, event.end ?? 0];
    return start < scope.end && end > scope.start;
  }
  return true;
}

function renderEvent(event: GraphOccurrence, zone: string): Record<string, unknown> {
  const when = event.startDate
    ? { start: allDayTimeZone(event.startDate, zone), end: allDayTimeZone(event.endDate ?? event.startDate, zone) }
    : { start: dateTimeTimeZone(event.start ?? 0, zone), end: dateTimeTimeZone(event.end ?? 0, zone) };
  return {
    '@odata.etag': `W/"${event.id.slice(-6)}"`,
    id: event.id,
    subject: event.subject,
    isAllDay: event.startDate !== undefined,
    isCancelled: event.isCancelled ?? false,
    type: event.type,
    seriesMasterId: event.seriesMasterId ?? null,
    originalStart: event.originalStart === undefined ? null : new Date(event.originalStart).toISOString().replace('.000Z', 'Z'),
    originalStartTimeZone: 'Pacific Standard Time',
    showAs: 'busy',
    ...when,
    location: { displayName: event.location ?? '' },
    organizer: event.organizer ? email(event.organizer) : null,
    attendees: (event.attendees ?? []).map((person) => ({ ...email(person), type: 'required', status: { response: person.response, time: '0001-01-01T00:00:00Z' } })),
    body: { contentType: 'html', content: '<p>event body</p>' },
  };
}

function renderMessage(message: GraphMessage, select: string[] | undefined): Record<string, unknown> {
  const full: Record<string, unknown> = {
    id: message.id,
    subject: message.subject,
    from: email(message.from),
    sender: email(message.from),
    toRecipients: message.to.map(email),
    ccRecipients: (message.cc ?? []).map(email),
    receivedDateTime: message.receivedDateTime,
    isRead: message.isRead ?? false,
    hasAttachments: message.hasAttachments ?? false,
    conversationId: message.conversationId ?? `conv-${message.id}`,
    categories: message.categories ?? [],
    parentFolderId: message.parentFolderId,
    bodyPreview: (message.body ?? '').slice(0, 255),
    body: { contentType: 'text', content: message.body ?? '' },
  };
  if (!select) return full;
  return Object.fromEntries(Object.entries(full).filter(([name]) => name === 'id' || select.includes(name)));
}

function renderContact(contact: GraphContact): Record<string, unknown> {
  return {
    id: contact.id,
    displayName: contact.displayName,
    givenName: contact.givenName ?? null,
    surname: contact.surname ?? null,
    companyName: contact.companyName ?? null,
    jobTitle: contact.jobTitle ?? null,
    emailAddresses: contact.emailAddresses ?? [],
    mobilePhone: contact.mobilePhone ?? null,
    businessPhones: contact.businessPhones ?? [],
    homePhones: [],
    birthday: contact.birthday ?? null,
    homeAddress: contact.homeAddress ?? {},
    businessAddress: {},
    otherAddress: {},
    lastModifiedDateTime: '2026-01-05T10:00:00Z',
  };
}

/**
 * The double's mailbox: occurrences, messages and contacts, each change stamped with a sequence number,
 * and the delta rounds of reference §6.2 over them: an initial round lists what is in scope, a round from
 * a deltaLink lists what changed since (full items) and what left (`@removed`); pages are served from a
 * snapshot taken when the round began, linked by `$skiptoken`, the last with a `$deltatoken`. Tokens live
 * only in the double's memory: an unknown one (forged, or after `expireDeltaTokens`) is a 410.
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
  function remove(kind: Kind, id: string): void {
    const entry = entries.get(`${kind}:${id}`);
    if (!entry) throw new Error(`the double holds no ${kind} '${id}'`);
    seq += 1;
    entries.set(`${kind}:${id}`, { ...entry, seq, removed: true });
  }
  const get = <T extends Entry['data']>(kind: Kind, id: string): T => {
    const entry = entries.get(`${kind}:${id}`);
    if (!entry || entry.removed) throw new Error(`the double holds no ${kind} '${id}'`);
    return entry.data as T;
  };

  function render(entry: Entry, how: Render): unknown {
    if (entry.kind === 'event') return renderEvent(entry.data as GraphOccurrence, how.zone);
    if (entry.kind === 'message') return renderMessage(entry.data as GraphMessage, how.select);
    return renderContact(entry.data as GraphContact);
  }

  function rowsOf(round: Round): unknown[] {
    const rows: unknown[] = [];
    for (const entry of entries.values()) {
      if (entry.kind !== round.scope.kind || entry.seq <= round.since) continue;
      const was = round.since > 0;
      if (!entry.removed && inScope(entry, round.scope)) rows.push(render(entry, round.render));
      else if (was && (entry.removed || entry.kind === 'event' || entry.movedFrom === (round.scope as { folderId?: string }).folderId)) {
        rows.push({ id: entry.id, '@removed': { reason: entry.removed ? 'deleted' : 'changed' } });
      }
    }
    return rows;
  }

  return {
    put,
    remove,
    get,
    /** Begins a round: from scratch (`scope`), or from a deltaLink's token; undefined for an unknown token. */
    begin(from: { scope: Scope; render: Render } | { deltaToken: string }): Paging | undefined {
      const round = 'deltaToken' in from ? deltaTokens.get(from.deltaToken) : { scope: from.scope, since: 0, render: from.render };
      if (!round) return undefined;
      return { rows: rowsOf(round), offset: 0, next: { ...round, since: seq } };
    },
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
    /** Every delta and skip token is forgotten: the next use of one is a 410 (sync state not found). */
    expireDeltaTokens(): void {
      deltaTokens.clear();
      skipTokens.clear();
    },
    /** Live (not removed) entries of a kind, for assertions. */
    live: (kind: Kind) => [...entries.values()].filter((entry) => entry.kind === kind && !entry.removed).map((entry) => entry.data),
  };
}

export type GraphStore = ReturnType<typeof createGraphStore>;
