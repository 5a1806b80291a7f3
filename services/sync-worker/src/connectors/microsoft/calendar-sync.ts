import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { calendarWindowEdges, DEFAULT_CALENDAR_WINDOW, type CalendarWindow } from '../kit/calendar-window.ts';
import { SourceCursorExpiredError, SourceUnavailableError } from '../kit/source-errors.ts';
import { graphClient, type GraphClient } from './graph-client.ts';
import { SeriesSchema } from './graph-mapping.ts';
import { seriesWriter } from './series-round.ts';

const DAY = 86_400_000;

/**
 * The sync window of calendar occurrences: `CALENDAR_PAST_DAYS` back to `CALENDAR_FUTURE_DAYS` ahead of today
 * (UTC midnights), 90 and 365 by default. A calendarView delta keeps the window of its first request; it is
 * moved (a fresh round) once its start falls more than `slackDays` behind the window's start, so the window is
 * never more than a week stale.
 */
export const CALENDAR_WINDOW = { ...DEFAULT_CALENDAR_WINDOW, slackDays: 7 } as const;

/** Times in UTC: Graph's dateTime carries no offset, and UTC is the one zone read without a table. */
const PREFER = ['outlook.timezone="UTC"'];

const CursorSchema = z.object({
  deltaLink: z.url(),
  windowStart: z.iso.datetime(),
  windowEnd: z.iso.datetime(),
  /** The shared fields of each series master seen, by master id (stripped occurrences take theirs). */
  series: z.record(z.string(), SeriesSchema),
  /** The other calendars: each one's events listed last time, id → start (ms). */
  others: z.record(z.string(), z.record(z.string(), z.number())),
});
type Cursor = z.infer<typeof CursorSchema>;

const CalendarSchema = z.object({ id: z.string().min(1), name: z.string().nullish(), isDefaultCalendar: z.boolean().nullish() });

export function calendarWindow(now: number, window: CalendarWindow = DEFAULT_CALENDAR_WINDOW): { start: string; end: string } {
  const { from, to } = calendarWindowEdges(now, window);
  return { start: new Date(from).toISOString(), end: new Date(to).toISOString() };
}

async function calendarsOf(graph: GraphClient) {
  const parsed = z.array(CalendarSchema).safeParse(await graph.list('/me/calendars'));
  if (!parsed.success) throw new SourceUnavailableError('Microsoft Graph answered the calendar list in an unexpected shape');
  return parsed.data;
}

async function primaryCalendar(graph: GraphClient): Promise<string> {
  const parsed = CalendarSchema.safeParse(await graph.get('/me/calendar'));
  if (!parsed.success) throw new SourceUnavailableError('Microsoft Graph answered the primary calendar in an unexpected shape');
  return parsed.data.id;
}

/**
 * Every calendar of the user (`GET /me/calendars`). The primary one through `calendarView/delta`, which
 * v1.0 offers for the primary calendar only (event: delta): incremental from the stored deltaLink while
 * the window holds; when it moves, the old round is replayed first (so a change or deletion since the
 * last sync is not lost with its deltaLink), then a fresh round over the new window. Each other calendar
 * through its `calendarView`, listed whole every sync; an event it no longer lists in the window leaves
 * the cache. Rows before the window stay as history; an occurrence keeps its id, and upserts are keyed
 * on it. A cursor stored before series were read is treated as expired, so the sync runner's full
 * resync removes the series masters that were stored as events.
 */
export async function syncCalendar(context: ConnectorContext, now: number, apiBase: string, settings: CalendarWindow = DEFAULT_CALENDAR_WINDOW): Promise<SyncOutcome> {
  const graph = graphClient(context, apiBase);
  const parsed = CursorSchema.safeParse(context.cursor);
  if (context.cursor !== null && !parsed.success) throw new SourceCursorExpiredError('the calendar cursor predates reading series masters');
  const cursor: Cursor | undefined = parsed.success ? parsed.data : undefined;
  const wanted = calendarWindow(now, settings);
  const calendars = await calendarsOf(graph);
  // `isDefaultCalendar` names the primary one; when no calendar says so, GET /me/calendar does (calendar-get).
  const flagged = calendars.find((calendar) => calendar.isDefaultCalendar === true);
  const primaryId = flagged?.id ?? (await primaryCalendar(graph));
  const primary = calendars.find((calendar) => calendar.id === primaryId);
  const series = { ...cursor?.series };
  const writer = seriesWriter(context, graph, PREFER, series);
  const holds = cursor !== undefined && Date.parse(cursor.windowStart) >= Date.parse(wanted.start) - CALENDAR_WINDOW.slackDays * DAY;

  let window = wanted;
  let deltaLink: string;
  if (cursor && holds) {
    window = { start: cursor.windowStart, end: cursor.windowEnd };
    deltaLink = await writer.round(cursor.deltaLink, primary?.name ?? null, window);
  } else {
    if (cursor) {
      context.log.info({ from: cursor.windowStart, to: wanted.start }, 'calendar window moves forward');
      await writer.round(cursor.deltaLink, primary?.name ?? null, { start: cursor.windowStart, end: cursor.windowEnd });
    }
    const query = new URLSearchParams({ startDateTime: wanted.start, endDateTime: wanted.end });
    deltaLink = await writer.round(`/me/calendarView/delta?${query.toString()}`, primary?.name ?? null);
  }

  const others: Cursor['others'] = {};
  const query = new URLSearchParams({ startDateTime: window.start, endDateTime: window.end });
  for (const calendar of calendars.filter((candidate) => candidate.id !== primaryId)) {
    const listed = await writer.write(await graph.list(`/me/calendars/${encodeURIComponent(calendar.id)}/calendarView?${query.toString()}`, PREFER), calendar.name ?? null);
    others[calendar.id] = Object.fromEntries(listed.map((row) => [row.id, row.start]));
    const before = Object.entries(cursor?.others[calendar.id] ?? {});
    writer.remove(before.filter(([id, start]) => start >= Date.parse(window.start) && others[calendar.id]?.[id] === undefined).map(([id]) => id));
  }
  // A calendar gone from the list takes its events with it.
  for (const [id, events] of Object.entries(cursor?.others ?? {})) if (!others[id]) writer.remove(Object.keys(events));
  await writer.finish();
  return { mode: cursor && holds ? 'incremental' : 'full', cursor: { deltaLink, windowStart: window.start, windowEnd: window.end, series, others } satisfies Cursor };
}
