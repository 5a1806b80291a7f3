/**
 * Date and instant values checked before they reach Postgres. JavaScript's `Date.parse` accepts what
 * Postgres refuses (`2026-02-30` rolls over to March, year 0, years past 9999, signed six-digit years)
 * and guesses at free text (`"12"` is December 2001), so values are read here by one strict grammar:
 * a real calendar date with a year from 0001 to 9999, and for instants an optional time and offset.
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;
const OFFSET = /^[+-](\d{2}):?(\d{2})?$/;

/** A `YYYY-MM-DD` that names a real day between 0001-01-01 and 9999-12-31, else undefined. */
export function calendarDate(value: string): string | undefined {
  const match = DATE.exec(value);
  if (!match) return undefined;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  if (year < 1 || month < 1 || month > 12 || day < 1) return undefined;
  // Day 0 of the next month is the last day of this one; setUTCFullYear keeps years below 100 as written.
  const last = new Date(0);
  last.setUTCFullYear(year, month, 0);
  return day <= last.getUTCDate() ? value : undefined;
}

/**
 * An ISO 8601 instant (or a bare date, meaning its midnight UTC) in the form Postgres reads exactly,
 * fractions of a second kept; no offset means UTC. Undefined when it is not one.
 */
export function isoInstant(value: string): string | undefined {
  const match = INSTANT.exec(value);
  if (!match) return undefined;
  const [, date = '', hour = '00', minute = '00', second = '00', fraction = '', offset = 'Z'] = match;
  if (!calendarDate(date) || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  const zone = OFFSET.exec(offset);
  // Postgres refuses a displacement of 16 hours or more; real ones run from -12:00 to +14:00.
  if (zone && (Number(zone[1]) > 15 || Number(zone[2] ?? 0) > 59)) return undefined;
  return `${date}T${hour}:${minute}:${second}${fraction}${offset.toUpperCase()}`;
}

/** True when the string can be stored and compared as text: no NUL and no unpaired surrogate. */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && value.isWellFormed();
}
