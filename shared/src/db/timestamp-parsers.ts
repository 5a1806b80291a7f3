/**
 * Postgres's text for `timestamp` and `timestamptz` (DateStyle ISO): `2026-03-01 07:00:00.123456+00`,
 * with an offset of hours, minutes and seconds (historical zones have seconds), and ` BC` for years
 * before 1. Years may have more than four digits (Postgres holds up to 294276).
 */
const PG_TIMESTAMP = /^(\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?)?( BC)?$/;

/** The years an instant is served as ISO text for: what the query grammar accepts back, four digits. */
const FIRST_YEAR = 1;
const LAST_YEAR = 9999;

/** The ISO 8601 UTC text, with milliseconds, of a Postgres timestamp text; undefined when it has none. */
function isoInstantOf(text: string, withOffset: boolean): string | undefined {
  const match = PG_TIMESTAMP.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hours, minutes, seconds, fraction = '', sign, offsetHours, offsetMinutes = '0', offsetSeconds = '0', bc] = match;
  if (bc !== undefined || withOffset !== (sign !== undefined)) return undefined;
  const local = new Date(0);
  // setUTCFullYear, not Date.UTC: the latter reads years 0–99 as 1900–1999.
  local.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  local.setUTCHours(Number(hours), Number(minutes), Number(seconds), Number(fraction.padEnd(3, '0').slice(0, 3)));
  const offsetMs = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(offsetHours) * 3_600_000 + Number(offsetMinutes) * 60_000 + Number(offsetSeconds) * 1000);
  const instant = new Date(local.getTime() - offsetMs);
  if (Number.isNaN(instant.getTime())) return undefined;
  const utcYear = instant.getUTCFullYear();
  return utcYear >= FIRST_YEAR && utcYear <= LAST_YEAR ? instant.toISOString() : undefined;
}

/** What a UTC session sends for nearly every `timestamptz`: `2026-03-01 07:00:00.123456+00`, years 1000–9999. */
const PG_UTC_TIMESTAMPTZ = /^([1-9]\d{3}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/;

/** The common case as plain text surgery (Postgres only sends valid dates), without building two Dates. */
function isoOfUtcText(text: string): string | undefined {
  const match = PG_UTC_TIMESTAMPTZ.exec(text);
  if (!match) return undefined;
  const fraction = (match[3] ?? '').padEnd(3, '0').slice(0, 3);
  return `${match[1]}T${match[2]}.${fraction}Z`;
}

/**
 * `timestamptz` as ISO 8601 UTC with milliseconds. Total: a stored value that has no such text
 * (`infinity`, `-infinity`, a BC year, a year past 9999) is served as Postgres's own text rather than
 * failing the whole read (docs/decisions.md).
 */
export function parseTimestamptz(text: string): string {
  return isoOfUtcText(text) ?? isoInstantOf(text, true) ?? text;
}

/** `timestamp` (no zone) read as UTC, as ISO 8601 with milliseconds; total in the same way. */
export function parseTimestamp(text: string): string {
  return isoInstantOf(text, false) ?? text;
}
