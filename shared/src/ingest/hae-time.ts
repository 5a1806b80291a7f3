const HAE_TIME = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d+)?)\s*(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * Health Auto Export writes `yyyy-MM-dd HH:mm:ss Z` (a space, and an offset like `+0800` without a
 * colon), which `Date` does not parse reliably (reference §4.1); ISO 8601 is accepted too. Returns an
 * ISO instant in UTC, or undefined for anything else (a time without an offset included: it is ambiguous).
 */
export function parseHaeTime(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = HAE_TIME.exec(value.trim());
  if (!match) return undefined;
  const [, day, time, zone] = match;
  if (!zone) return undefined;
  const offset = zone === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  const at = Date.parse(`${day}T${time}${offset}`);
  return Number.isNaN(at) ? undefined : new Date(at).toISOString();
}

/** A night's date (`yyyy-MM-dd`) from an aggregated sleep point's `date`, which may also carry a time. */
export function haeDay(value: unknown): string | undefined {
  return typeof value === 'string' ? /^(\d{4}-\d{2}-\d{2})/.exec(value.trim())?.[1] : undefined;
}
