/** Windows zone names Graph uses (reference §6.3), mapped to IANA for the double's own rendering. */
const WINDOWS_ZONES: Record<string, string> = {
  UTC: 'UTC',
  'Pacific Standard Time': 'America/Los_Angeles',
  'Hawaiian Standard Time': 'Pacific/Honolulu',
  'Line Islands Standard Time': 'Pacific/Kiritimati',
  'W. Europe Standard Time': 'Europe/Berlin',
};

/** `Prefer: outlook.timezone="…"` out of a Prefer header; UTC when absent (calendarView's default). */
export function preferredZone(prefer: string | undefined): string {
  return /outlook\.timezone="([^"]+)"/i.exec(prefer ?? '')?.[1] ?? 'UTC';
}

/** `Prefer: odata.maxpagesize=N`, or the fallback. */
export function preferredPageSize(prefer: string | undefined, fallback: number): number {
  const size = Number(/odata\.maxpagesize=(\d+)/i.exec(prefer ?? '')?.[1]);
  return Number.isInteger(size) && size > 0 ? size : fallback;
}

/** Graph's DateTimeTimeZone: the wall time in the zone, no offset, seven fractional digits. */
export function dateTimeTimeZone(ms: number, zone: string): { dateTime: string; timeZone: string } {
  const iana = WINDOWS_ZONES[zone];
  if (!iana) throw new Error(`the Graph double knows no zone '${zone}'`);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone: iana, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })
      .formatToParts(new Date(ms))
      .map((part) => [part.type, part.value]),
  );
  return { dateTime: `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.0000000`, timeZone: zone };
}

/** An all-day event's day as Graph sends it: midnight, floating, labelled with the zone asked for. */
export function allDayTimeZone(date: string, zone: string): { dateTime: string; timeZone: string } {
  return { dateTime: `${date}T00:00:00.0000000`, timeZone: zone };
}

/** Midnight UTC of a `YYYY-MM-DD`, for window checks of all-day events. */
export const dayMs = (date: string) => Date.parse(`${date}T00:00:00Z`);
