import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { googleReader, parseEach } from './google-api.ts';
import { calendarWindowEdges, type CalendarWindow } from '../kit/calendar-window.ts';
import { eventRecord, eventSourceId, GoogleEventSchema, inWindow, type CalendarInfo } from './calendar-mapping.ts';

const OBJECT = 'calendar.event';
const DAY_MS = 86_400_000;
/** How far past the window's future edge a full sync keeps, so a sliding window re-lists weekly, not daily. */
const HORIZON_SLACK_MS = 7 * DAY_MS;

export { DEFAULT_CALENDAR_WINDOW, type CalendarWindow } from '../kit/calendar-window.ts';

const CalendarListSchema = z.object({
  items: z.array(z.looseObject({ id: z.string(), summary: z.string().optional(), summaryOverride: z.string().optional(), timeZone: z.string().optional(), selected: z.boolean().optional(), hidden: z.boolean().optional(), deleted: z.boolean().optional() })).default([]),
  nextPageToken: z.string().nullish(),
});
const EventsPageSchema = z.object({ items: z.array(z.unknown()).default([]), nextPageToken: z.string().nullish(), nextSyncToken: z.string().nullish(), timeZone: z.string().optional() });

/** The future edge the last full sync kept occurrences to, and one sync token per calendar. */
const CursorSchema = z.object({ horizon: z.number(), tokens: z.record(z.string(), z.string()) });
type Cursor = z.infer<typeof CursorSchema>;

/** The window's edges at UTC midnights, as the Microsoft connector places its own, so a sync later the same day asks for the same `timeMin`. */
const windowEdges = calendarWindowEdges;

/**
 * Calendar v3 (reference §7.1) with sync tokens (`singleEvents=true`, one row per occurrence). The full
 * listing is bounded below by the window's start: Google's sync guide ("Synchronize resources
 * efficiently", Initial full sync) lets the first request be restricted by parameters, its own example
 * sets `timeMin`, and the token it ends with is then sent alone, since `timeMin`/`timeMax` beside a
 * `syncToken` are refused (events.list reference, `syncToken`). Incremental answers may still carry
 * changes outside the window, so only the window's occurrences are kept. A full sync keeps them up to a
 * horizon a week past the window's edge and stores it; once the window's edge passes the horizon, the
 * next sync lists in full again, so occurrences that came into the window are taken and those that left
 * it are removed.
 */
export async function syncCalendar(context: ConnectorContext, apiBase: string, window: CalendarWindow): Promise<SyncOutcome> {
  const { from, to } = windowEdges(Date.now(), window);
  const previous = CursorSchema.safeParse(context.cursor);
  const cursor: Cursor | undefined = previous.success && previous.data.horizon >= to ? previous.data : undefined;
  const horizon = cursor?.horizon ?? to + HORIZON_SLACK_MS;
  const pages = googleReader(context, 'Google Calendar', 'Google Calendar API');

  const calendars: CalendarInfo[] = [];
  for await (const page of pages(`${apiBase}/users/me/calendarList`, { maxResults: '250' }, CalendarListSchema)) {
    for (const entry of page.items) {
      // The calendars the person ticked in Google: hidden, unticked or deleted ones are not read.
      if (entry.selected === true && entry.hidden !== true && entry.deleted !== true) calendars.push({ id: entry.id, name: entry.summaryOverride ?? entry.summary ?? entry.id, timeZone: entry.timeZone });
    }
  }

  const tokens: Cursor['tokens'] = {};
  const listed = new Set<string>();
  const known = await context.cache.sourceIds(OBJECT);
  for (const calendar of calendars) {
    const token = cursor?.tokens[calendar.id];
    const records: Array<ReturnType<typeof eventRecord>> = [];
    const gone: string[] = [];
    let nextSyncToken: string | undefined;
    // `timeMin` is an exclusive bound on an event's end; a day earlier lists the all-day events that `inWindow` keeps with its day's slack.
    const query = { singleEvents: 'true', maxResults: '2500', ...(token ? { syncToken: token } : { timeMin: new Date(from - DAY_MS).toISOString() }) };
    for await (const page of pages(`${apiBase}/calendars/${encodeURIComponent(calendar.id)}/events`, query, EventsPageSchema)) {
      for (const event of parseEach(context, 'Google Calendar event', GoogleEventSchema, page.items)) {
        const id = eventSourceId(calendar.id, event.id);
        if (event.status === 'cancelled') {
          gone.push(id);
          // A cancelled series arrives as its own id: its occurrences are `<series>_<original start>`.
          if (!event.recurringEventId) gone.push(...known.filter((candidate) => candidate.startsWith(`${id}_`)));
        } else if (inWindow(event, from, horizon)) {
          records.push(eventRecord({ ...calendar, timeZone: calendar.timeZone ?? page.timeZone }, event));
        } else {
          gone.push(id);
        }
      }
      if (page.nextSyncToken) nextSyncToken = page.nextSyncToken;
    }
    if (records.length > 0) await context.cache.upsert(OBJECT, records);
    for (const record of records) listed.add(record.source_id);
    const removable = gone.filter((id) => known.includes(id) && !listed.has(id));
    if (removable.length > 0) await context.cache.remove(OBJECT, removable);
    if (nextSyncToken) tokens[calendar.id] = nextSyncToken;
  }

  // A full listing names every row that should be here; an incremental one drops the calendars unticked since.
  const kept = new Set(calendars.map((calendar) => `${calendar.id}/`));
  const stale = cursor
    ? known.filter((id) => ![...kept].some((prefix) => id.startsWith(prefix)))
    : known.filter((id) => !listed.has(id));
  if (stale.length > 0) await context.cache.remove(OBJECT, stale);
  return { mode: cursor ? 'incremental' : 'full', cursor: { horizon, tokens } satisfies Cursor };
}
