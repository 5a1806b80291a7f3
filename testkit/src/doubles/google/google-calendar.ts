import type { ServerResponse } from 'node:http';
import { googleError, opaque, pageOf, sendJson } from './google-http.ts';

/** An event of the double: a single event, or a weekly series of `count` occurrences with per-occurrence exceptions. */
export type DoubleEvent = {
  id: string;
  calendarId: string;
  summary: string;
  /** Timed: an instant with its zone; all-day: `date` (end exclusive). */
  start: { dateTime: string; timeZone: string } | { date: string };
  end: { dateTime: string; timeZone: string } | { date: string };
  location?: string;
  weekly?: number;
  cancelled?: boolean;
  /** Per occurrence (keyed by the original start's instance suffix): moved or cancelled. */
  exceptions: Map<string, { start?: DoubleEvent['start']; end?: DoubleEvent['end']; cancelled?: boolean; seq: number }>;
  seq: number;
};

export type DoubleCalendar = { id: string; summary: string; timeZone: string; selected: boolean; primary?: boolean };

const WEEK_MS = 7 * 86_400_000;
const DAY_MS = 86_400_000;

const instanceSuffix = (start: DoubleEvent['start']) =>
  'dateTime' in start ? new Date(start.dateTime).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '') : start.date.replace(/-/g, '');

function shift(at: DoubleEvent['start'], ms: number): DoubleEvent['start'] {
  if ('dateTime' in at) return { dateTime: new Date(Date.parse(at.dateTime) + ms).toISOString().replace('.000Z', 'Z'), timeZone: at.timeZone };
  return { date: new Date(Date.parse(`${at.date}T00:00:00Z`) + ms).toISOString().slice(0, 10) };
}

/**
 * Google Calendar v3 (reference §7.1): the calendar list with `selected`, `events.list` with
 * `singleEvents` expansion (instance ids `<series>_<original start>`, `recurringEventId`,
 * `originalStartTime`), `pageToken` paging with pages that can be short or empty, `nextSyncToken` only on the
 * last page, the parameters a `syncToken` refuses (400), sparse cancelled rows in incremental answers,
 * and 410 `fullSyncRequired` once the tokens are expired. `timeMin` (exclusive, on an event's end) and
 * `timeMax` (exclusive, on its start) bound a full listing, which still ends with a sync token, as the
 * sync guide's own example does (Initial full sync, `setTimeMin` a year back); the incremental answers of
 * that token then bring every change, inside the bounds or not (not documented: a guess).
 */
export function createCalendarPart(options: { now: number; tick: () => number }) {
  const calendars: DoubleCalendar[] = [
    { id: 'primary-calendar@example.com', summary: 'Demo Person', timeZone: 'Europe/Zurich', selected: true, primary: true },
    { id: 'family@group.calendar.google.com', summary: 'Family', timeZone: 'Pacific/Honolulu', selected: true },
    { id: 'holidays@group.v.calendar.google.com', summary: 'Holidays (hidden)', timeZone: 'UTC', selected: false },
  ];
  const events = new Map<string, DoubleEvent>();
  let generation = 0;
  /** `pageSize`: pages are short (reference §7.1: pages can be short or empty while a nextPageToken exists). */
  const state = { pageSize: 3, emptyFirstPage: true };

  function add(event: Omit<DoubleEvent, 'exceptions' | 'seq'>): DoubleEvent {
    const stored: DoubleEvent = { ...event, exceptions: new Map(), seq: options.tick() };
    events.set(event.id, stored);
    return stored;
  }
  const day = (offset: number) => new Date(options.now + offset * DAY_MS).toISOString().slice(0, 10);
  const at = (offset: number, hourUtc: number) => `${day(offset)}T${String(hourUtc).padStart(2, '0')}:00:00Z`;
  const [primary, family, hidden] = calendars as [DoubleCalendar, DoubleCalendar, DoubleCalendar];
  add({ id: 'weeklysync', calendarId: primary.id, summary: 'Weekly sync', start: { dateTime: at(-14, 8), timeZone: 'Europe/Zurich' }, end: { dateTime: at(-14, 9), timeZone: 'Europe/Zurich' }, weekly: 6, location: 'Room 4' });
  add({ id: 'dentist', calendarId: primary.id, summary: 'Dentist', start: { dateTime: at(1, 14), timeZone: 'Europe/Zurich' }, end: { dateTime: at(1, 15), timeZone: 'Europe/Zurich' } });
  add({ id: 'offsite', calendarId: primary.id, summary: 'Team offsite', start: { date: day(1) }, end: { date: day(3) } });
  add({ id: 'birthday', calendarId: family.id, summary: 'Grandma birthday', start: { date: day(1) }, end: { date: day(2) } });
  add({ id: 'longago', calendarId: primary.id, summary: 'Long ago', start: { dateTime: at(-400, 10), timeZone: 'UTC' }, end: { dateTime: at(-400, 11), timeZone: 'UTC' } });
  add({ id: 'hiddenholiday', calendarId: hidden.id, summary: 'Hidden holiday', start: { date: day(2) }, end: { date: day(3) } });

  type Row = Record<string, unknown> & { seq: number };
  function occurrences(event: DoubleEvent): Row[] {
    const base = { iCalUID: `${event.id}@google.com`, summary: event.summary, ...(event.location ? { location: event.location } : {}), organizer: { email: 'demo.person@example.com', displayName: 'Demo Person', self: true } };
    if (!event.weekly) {
      if (event.cancelled) return [{ id: event.id, status: 'cancelled', seq: event.seq }];
      return [{ ...base, id: event.id, status: 'confirmed', start: event.start, end: event.end, seq: event.seq }];
    }
    const rows: Row[] = [];
    for (let index = 0; index < event.weekly; index += 1) {
      const originalStart = shift(event.start, index * WEEK_MS);
      const suffix = instanceSuffix(originalStart);
      const exception = event.exceptions.get(suffix);
      const id = `${event.id}_${suffix}`;
      const seq = Math.max(event.seq, exception?.seq ?? 0);
      if (event.cancelled || exception?.cancelled) {
        rows.push({ id, status: 'cancelled', recurringEventId: event.id, originalStartTime: originalStart, seq });
        continue;
      }
      rows.push({ ...base, id, status: 'confirmed', recurringEventId: event.id, originalStartTime: originalStart, start: exception?.start ?? originalStart, end: exception?.end ?? shift(event.end, index * WEEK_MS), seq });
    }
    return rows;
  }

  function listEvents(res: ServerResponse, calendarId: string, query: URLSearchParams) {
    const calendar = calendars.find((candidate) => candidate.id === calendarId || (calendarId === 'primary' && candidate.primary));
    if (!calendar) return googleError(res, 404, 'notFound', 'Not Found');
    const syncToken = query.get('syncToken');
    // events.list reference, `syncToken`, and the sync guide ("Synchronize resources efficiently",
    // Incremental sync): these may not accompany a sync token; the reason Google names is a guess.
    if (syncToken) {
      for (const refused of ['timeMin', 'timeMax', 'updatedMin', 'q', 'orderBy', 'iCalUID', 'privateExtendedProperty', 'sharedExtendedProperty']) {
        if (query.has(refused)) return googleError(res, 400, 'invalid', `The syncToken cannot be used together with ${refused}.`);
      }
    }
    // events.list reference, `timeMin`/`timeMax`: RFC 3339 with a mandatory offset; Google's 400 wording is a guess.
    for (const bound of ['timeMin', 'timeMax']) {
      const value = query.get(bound);
      if (value !== null && (!/(Z|[+-]\d{2}:\d{2})$/i.test(value) || Number.isNaN(Date.parse(value)))) return googleError(res, 400, 'badRequest', `Bad Request: ${bound} must be an RFC 3339 timestamp with an offset.`);
    }
    if (query.get('showDeleted') === 'false' && syncToken) return googleError(res, 400, 'invalid', 'showDeleted=false is not allowed with a syncToken.');
    const opened = syncToken ? opaque.open<{ calendarId: string; seq: number; generation: number; singleEvents: boolean }>(syncToken) : undefined;
    if (syncToken && (!opened || opened.calendarId !== calendar.id)) return googleError(res, 400, 'invalid', 'Invalid sync token value.');
    // Sync guide ("Full sync required by server"): 410 Gone; the reason and message as Google sends them
    // (reference §7.1 [GC-ERR]; the message quoted in bmathews/menubar-calendar issue 20).
    if (opened && opened.generation !== generation) return googleError(res, 410, 'fullSyncRequired', 'Sync token is no longer valid, a full sync is required.');
    const singleEvents = query.get('singleEvents') === 'true';
    if (opened && opened.singleEvents !== singleEvents) return googleError(res, 400, 'invalid', 'singleEvents must match the initial full sync.');
    const timeMin = query.get('timeMin') ? Date.parse(query.get('timeMin') ?? '') : -Infinity;
    const timeMax = query.get('timeMax') ? Date.parse(query.get('timeMax') ?? '') : Infinity;
    const instant = (value: DoubleEvent['start']) => ('dateTime' in value ? Date.parse(value.dateTime) : Date.parse(`${value.date}T00:00:00Z`));

    let rows = [...events.values()].filter((event) => event.calendarId === calendar.id).flatMap((event) => (singleEvents ? occurrences(event) : occurrences(event).slice(0, 1)));
    if (opened) rows = rows.filter((row) => row.seq > opened.seq);
    else rows = rows.filter((row) => row.status !== 'cancelled' || query.get('showDeleted') === 'true');
    rows = rows.filter((row) => !row.start || (instant(row.end as DoubleEvent['start']) > timeMin && instant(row.start as DoubleEvent['start']) < timeMax));
    const seqNow = options.tick();
    const listing = `${calendar.id}|${syncToken ?? ''}|${singleEvents}`;
    // events.list reference, `maxResults`: "The number of events in the resulting page may be less than this
    // value, or none at all, even if there are more events matching the query. Incomplete pages can be detected
    // by a non-empty nextPageToken field in the response." The first page of a full listing is such an empty one.
    if (!syncToken && !query.get('pageToken') && state.emptyFirstPage) {
      return sendJson(res, 200, { kind: 'calendar#events', summary: calendar.summary, timeZone: calendar.timeZone, items: [], nextPageToken: opaque.seal({ offset: 0, query: listing }) });
    }
    const page = pageOf(rows, query.get('pageToken'), Math.min(Number(query.get('maxResults') ?? '250'), state.pageSize), listing);
    if (page === 'bad') return googleError(res, 400, 'invalid', 'Invalid page token value.');
    const items = page.slice.map(({ seq: _seq, ...row }) => ({ kind: 'calendar#event', updated: new Date(options.now).toISOString(), ...row }));
    return sendJson(res, 200, {
      kind: 'calendar#events',
      summary: calendar.summary,
      timeZone: calendar.timeZone,
      items,
      ...(page.next ? { nextPageToken: page.next } : { nextSyncToken: opaque.seal({ calendarId: calendar.id, seq: seqNow, generation, singleEvents }) }),
    });
  }

  return {
    calendars,
    events,
    state,
    add,
    /** Moves one occurrence of a series (its original start) by `ms`. */
    moveOccurrence(seriesId: string, index: number, ms: number) {
      const series = events.get(seriesId);
      if (!series) throw new Error(`no series ${seriesId}`);
      const original = shift(series.start, index * WEEK_MS);
      series.exceptions.set(instanceSuffix(original), { start: shift(original, ms), end: shift(shift(series.end, index * WEEK_MS), ms), seq: options.tick() });
    },
    cancelOccurrence(seriesId: string, index: number) {
      const series = events.get(seriesId);
      if (!series) throw new Error(`no series ${seriesId}`);
      series.exceptions.set(instanceSuffix(shift(series.start, index * WEEK_MS)), { cancelled: true, seq: options.tick() });
    },
    cancel(id: string) {
      const event = events.get(id);
      if (event) Object.assign(event, { cancelled: true, seq: options.tick() });
    },
    /** Every sync token given so far answers 410 `fullSyncRequired`. */
    expireSyncTokens: () => void (generation += 1),
    routes(res: ServerResponse, path: string, query: URLSearchParams): boolean {
      if (path === '/calendar/v3/users/me/calendarList') {
        const page = pageOf(calendars, query.get('pageToken'), 2, 'calendarList');
        if (page === 'bad') return googleError(res, 400, 'invalid', 'Invalid page token value.'), true;
        const items = page.slice.map((calendar) => ({ kind: 'calendar#calendarListEntry', accessRole: 'owner', ...calendar }));
        sendJson(res, 200, { kind: 'calendar#calendarList', items, ...(page.next ? { nextPageToken: page.next } : { nextSyncToken: opaque.seal({ list: true }) }) });
        return true;
      }
      const match = /^\/calendar\/v3\/calendars\/([^/]+)\/events$/.exec(path);
      if (!match) return false;
      listEvents(res, decodeURIComponent(match[1] ?? ''), query);
      return true;
    },
  };
}
