/**
 * The calendar sync window (`CALENDAR_PAST_DAYS`, `CALENDAR_FUTURE_DAYS`): occurrences kept from `pastDays`
 * back to `futureDays` ahead. Every calendar connector (Google, Microsoft, iCloud) follows the same one.
 */
export type CalendarWindow = { pastDays: number; futureDays: number };

/** The settings' defaults, for a connector built without the sync-worker's configuration (tests, tools). */
export const DEFAULT_CALENDAR_WINDOW: CalendarWindow = { pastDays: 90, futureDays: 365 };

const DAY_MS = 86_400_000;

/** The window's edges at UTC midnights around `now`, so two syncs the same day ask for the same window. */
export function calendarWindowEdges(now: number, window: CalendarWindow): { from: number; to: number } {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return { from: today - window.pastDays * DAY_MS, to: today + window.futureDays * DAY_MS };
}
