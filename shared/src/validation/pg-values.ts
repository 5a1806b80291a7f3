import { z } from 'zod';

/**
 * What Postgres can hold, checked before any value reaches SQL. Postgres refuses NUL in `text` (22021)
 * and in `jsonb` (22P05), and refuses an unpaired UTF-16 surrogate in `jsonb` (22P02); in a `text`
 * parameter the driver silently turns one into U+FFFD, so it is refused too rather than stored changed.
 * Instants and dates are kept to years 0001-9999: Postgres has no year 0, and a JavaScript ISO text
 * beyond 9999 (`+010000-…`) is not one Postgres reads.
 */
export const PG_VALUE_RULES = {
  text: 'must not contain NUL characters (\\u0000) or unpaired UTF-16 surrogates',
  instant: 'must be an ISO 8601 instant between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z',
  date: 'must be a date (YYYY-MM-DD) between 0001-01-01 and 9999-12-31',
  integer: 'must be a whole number from -2147483648 to 2147483647',
} as const;

/** Why `value` cannot be stored as Postgres text or inside jsonb, or null when it can. */
export function pgTextProblem(value: string): string | null {
  return value.includes('\u0000') || !value.isWellFormed() ? PG_VALUE_RULES.text : null;
}

/** Whether `value` can be stored as Postgres text or inside jsonb. */
export const isPgText = (value: string): boolean => pgTextProblem(value) === null;

/** `schema` with the Postgres text rule added; the schema's own rules and messages are kept. */
export function pgText<T extends z.ZodString>(schema: T, message: string = PG_VALUE_RULES.text): T {
  return schema.refine(isPgText, { error: message });
}

/** Any string Postgres can hold. */
export const PgTextSchema = pgText(z.string());

/**
 * The path (`a.b[2].c`) of the first string inside `value` (keys included) that Postgres cannot hold,
 * or null. For JSON destined for `jsonb`, and for naming the field behind a data exception.
 */
export function findUnstorableText(value: unknown, path = '', seen = new Set<object>()): string | null {
  if (typeof value === 'string') return isPgText(value) ? null : path || '(value)';
  if (value === null || typeof value !== 'object' || seen.has(value)) return null;
  seen.add(value);
  const entries = Array.isArray(value) ? value.map((item, index) => [index, item] as const) : Object.entries(value);
  for (const [key, item] of entries) {
    const itemPath = typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (typeof key === 'string' && !isPgText(key)) return itemPath;
    const found = findUnstorableText(item, itemPath, seen);
    if (found !== null) return found;
  }
  return null;
}

/** JSON that `jsonb` can hold: no string or key inside it has NUL or an unpaired surrogate. */
export const PgJsonSchema = z.unknown().superRefine((value, context) => {
  const path = findUnstorableText(value);
  if (path !== null) context.addIssue({ code: 'custom', message: path === '(value)' ? PG_VALUE_RULES.text : `'${path}' ${PG_VALUE_RULES.text}` });
});

const MIN_INSTANT_MS = new Date('0001-01-01T00:00:00.000Z').getTime();
const MAX_INSTANT_MS = new Date('9999-12-31T23:59:59.999Z').getTime();

/** Whether an epoch-millisecond instant lies in the range Postgres holds and ISO 8601 writes with four digits. */
export function isPgInstantMs(ms: number): boolean {
  return Number.isFinite(ms) && ms >= MIN_INSTANT_MS && ms <= MAX_INSTANT_MS;
}

/**
 * An instant as text, a Date or epoch milliseconds, out as ISO 8601 UTC with milliseconds; refused, with
 * the same words, when it is not a time (an invalid Date, a boolean, null…) or lies outside years 0001-9999.
 */
export const PgInstantSchema = z.union([z.string(), z.date(), z.number()], { error: PG_VALUE_RULES.instant }).transform((value, context) => {
  const date = value instanceof Date ? value : new Date(value);
  if (!isPgInstantMs(date.getTime())) {
    context.addIssue({ code: 'custom', message: PG_VALUE_RULES.instant });
    return z.NEVER;
  }
  return date.toISOString();
});

/** A calendar date `YYYY-MM-DD` that exists, in years 0001-9999. */
export const PgDateSchema = z.iso.date({ error: PG_VALUE_RULES.date }).refine((value) => !value.startsWith('0000'), { error: PG_VALUE_RULES.date });

/** A Postgres `integer`. */
export const PgIntegerSchema = z
  .number({ error: PG_VALUE_RULES.integer })
  .int({ error: PG_VALUE_RULES.integer })
  .min(-2147483648, { error: PG_VALUE_RULES.integer })
  .max(2147483647, { error: PG_VALUE_RULES.integer });
