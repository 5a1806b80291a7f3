import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { deltaApplier } from './delta-applier.ts';
import { graphClient } from './graph-client.ts';
import { eventRecord } from './graph-mapping.ts';

const OBJECT = 'calendar.event';
const DAY = 86_400_000;

/**
 * The sync window of calendar occurrences: from 90 days back to a year ahead of today (UTC midnights).
 * A calendarView delta keeps the window of its first request; it is moved (a fresh round) once its start
 * falls more than a week behind the window's start, so the window is never more than a week stale.
 */
export const CALENDAR_WINDOW = { pastDays: 90, futureDays: 365, slackDays: 7 } as const;

/** Times in UTC: Graph's dateTime carries no offset, and UTC is the one zone read without a table. */
const PREFER = ['outlook.timezone="UTC"'];

const CursorSchema = z.object({ deltaLink: z.url(), windowStart: z.iso.datetime(), windowEnd: z.iso.datetime() });

export function calendarWindow(now: number): { start: string; end: string } {
  const today = Math.floor(now / DAY) * DAY;
  return { start: new Date(today - CALENDAR_WINDOW.pastDays * DAY).toISOString(), end: new Date(today + CALENDAR_WINDOW.futureDays * DAY).toISOString() };
}

/**
 * Occurrences through `calendarView/delta` (series expanded: one row per occurrence). Incremental from
 * the stored deltaLink while the window holds; when it moves, the old round is replayed first (so a change
 * or deletion since the last sync is not lost with its deltaLink), then a fresh round over the new window
 * upserts every occurrence in it. Rows before the new window stay as history; nothing is listed twice,
 * since an occurrence keeps its id and upserts are keyed on it.
 */
export async function syncCalendar(context: ConnectorContext, now: number, apiBase: string): Promise<SyncOutcome> {
  const graph = graphClient(context, apiBase);
  const cursor = CursorSchema.safeParse(context.cursor);
  const wanted = calendarWindow(now);
  const applier = deltaApplier(context, OBJECT);
  const holds = cursor.success && Date.parse(cursor.data.windowStart) >= Date.parse(wanted.start) - CALENDAR_WINDOW.slackDays * DAY;
  if (cursor.success && holds) {
    const deltaLink = await graph.deltaRound(cursor.data.deltaLink, PREFER, applier.pages(eventRecord));
    await applier.finish();
    return { mode: 'incremental', cursor: { ...cursor.data, deltaLink } };
  }
  if (cursor.success) {
    context.log.info({ from: cursor.data.windowStart, to: wanted.start }, 'calendar window moves forward');
    await graph.deltaRound(cursor.data.deltaLink, PREFER, applier.pages(eventRecord));
  }
  const query = new URLSearchParams({ startDateTime: wanted.start, endDateTime: wanted.end });
  const deltaLink = await graph.deltaRound(`/me/calendarView/delta?${query.toString()}`, PREFER, applier.pages(eventRecord));
  await applier.finish();
  return { mode: 'full', cursor: { deltaLink, windowStart: wanted.start, windowEnd: wanted.end } };
}
