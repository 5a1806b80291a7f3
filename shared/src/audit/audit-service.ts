import type { DatabasePool } from '../db/index.ts';
import { ValidationError } from '../errors/index.ts';
import { PG_VALUE_RULES, isPgText } from '../validation/index.ts';
import { createAuditCursorCodec, loadAuditCursorKey, type AuditCursorCodec } from './audit-cursor.ts';
import { selectAuditRows, type AuditFilters } from './audit-queries.ts';
import { OPERATOR_USER_ID, type AuditRow } from './audit-types.ts';

/** Spec 4.5's answers, word for word where the spec gives them; the route and the tests use these. */
export const AUDIT_QUERY_ERRORS = {
  limit: "invalid 'limit'",
  before: "invalid 'before' cursor: echo the previous page's x-gateway-audit-next header value unmodified",
  since: "invalid 'since': expected an ISO 8601 timestamp such as 2026-03-01T00:00:00Z",
  decision: "invalid 'decision': expected 'allow' or 'deny'",
  repeated: (name: string) => `invalid '${name}': give it once`,
  /** A filter no stored row can match, refused before it reaches SQL. */
  text: (name: string) => `invalid '${name}': ${PG_VALUE_RULES.text}`,
} as const;

export const AUDIT_PAGE_HEADERS = {
  hasMore: 'x-gateway-audit-has-more',
  next: 'x-gateway-audit-next',
} as const;

/** Spec 8: default 100, at most 1000 (larger values are capped, not refused). */
export const AUDIT_PAGE_DEFAULT = 100;
export const AUDIT_PAGE_MAX = 1000;

export type AuditPageQuery = {
  filters: AuditFilters;
  limit: number;
  /** The raw cursor text, checked against its signature later. */
  before?: string;
};

const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

function inRange(text: string | undefined, min: number, max: number): boolean {
  const value = Number(text ?? min);
  return value >= min && value <= max;
}

/**
 * An ISO 8601 date or date-time, normalised to a text Postgres reads to the microsecond: a date alone is
 * midnight UTC, a time without a zone is UTC (every instant the gateway serves is UTC). Null when the
 * text is not such a timestamp, or names a day or time that does not exist.
 */
export function parseIsoTimestamp(text: string): string | null {
  const match = ISO_TIMESTAMP.exec(text);
  if (!match) return null;
  const [, year = '', month = '', day = '', hour = '00', minute = '00', second = '00', fraction = '', zone = 'Z'] = match;
  const daysInMonth = new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate();
  const zoneHours = zone.length > 1 ? zone.slice(1, 3) : '0';
  const zoneMinutes = zone.length > 3 ? zone.slice(-2) : '0';
  const valid =
    inRange(year, 1, 9999) &&
    inRange(month, 1, 12) &&
    inRange(day, 1, daysInMonth) &&
    inRange(hour, 0, 23) &&
    inRange(minute, 0, 59) &&
    inRange(second, 0, 59) &&
    inRange(zoneHours, 0, 14) &&
    inRange(zoneMinutes, 0, 59);
  if (!valid) return null;
  const offset = zone.toUpperCase() === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zoneMinutes.padStart(2, '0')}`;
  return `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}${offset}`;
}

function single(query: Record<string, unknown>, name: string, message = AUDIT_QUERY_ERRORS.repeated(name)): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ValidationError(message);
  return value;
}

/** Reads the query string of `GET /api/audit` (spec 4.5), refusing bad values with the spec's messages. */
export function parseAuditQuery(query: Record<string, unknown>): AuditPageQuery {
  const filters: AuditFilters = {};
  for (const name of ['agent', 'tool', 'sector'] as const) {
    const value = single(query, name);
    if (value !== undefined && !isPgText(value)) throw new ValidationError(AUDIT_QUERY_ERRORS.text(name));
    if (value !== undefined) filters[name] = value;
  }
  const decision = single(query, 'decision', AUDIT_QUERY_ERRORS.decision);
  if (decision !== undefined) {
    if (decision !== 'allow' && decision !== 'deny') throw new ValidationError(AUDIT_QUERY_ERRORS.decision);
    filters.decision = decision;
  }
  const since = single(query, 'since', AUDIT_QUERY_ERRORS.since);
  if (since !== undefined) {
    const parsed = parseIsoTimestamp(since);
    if (parsed === null) throw new ValidationError(AUDIT_QUERY_ERRORS.since);
    filters.since = parsed;
  }
  const limitText = single(query, 'limit', AUDIT_QUERY_ERRORS.limit);
  let limit = AUDIT_PAGE_DEFAULT;
  if (limitText !== undefined) {
    // Digits only: "1e2", "10.0", "+5", " 5" and "0" are not positive whole numbers as written.
    if (!/^\d+$/.test(limitText) || !/[1-9]/.test(limitText)) throw new ValidationError(AUDIT_QUERY_ERRORS.limit);
    limit = limitText.replace(/^0+/, '').length > 4 ? AUDIT_PAGE_MAX : Math.min(Number(limitText), AUDIT_PAGE_MAX);
  }
  const before = single(query, 'before', AUDIT_QUERY_ERRORS.before);
  return before === undefined ? { filters, limit } : { filters, limit, before };
}

export type AuditPage = {
  /** Newest first. */
  rows: AuditRow[];
  hasMore: boolean;
  /** The cursor for the next page; set exactly when `hasMore`. */
  next: string | null;
};

export type AuditReaderDeps = {
  db: DatabasePool;
  /** Default `OPERATOR_USER_ID`. */
  userId?: number;
};

export type AuditReader = ReturnType<typeof createAuditReader>;

/** The ledger's reads for `GET /api/audit`. */
export function createAuditReader({ db, userId = OPERATOR_USER_ID }: AuditReaderDeps) {
  let codec: Promise<AuditCursorCodec> | undefined;
  const cursorCodec = () => {
    codec ??= loadAuditCursorKey(db, userId)
      .then(createAuditCursorCodec)
      .catch((error: unknown) => {
        codec = undefined;
        throw error;
      });
    return codec;
  };

  return {
    /** One page for a raw query string; throws `ValidationError` with spec 4.5's messages. */
    async list(rawQuery: Record<string, unknown>): Promise<AuditPage> {
      const query = parseAuditQuery(rawQuery);
      let before = null;
      if (query.before !== undefined) {
        before = (await cursorCodec()).decode(query.before);
        if (before === null) throw new ValidationError(AUDIT_QUERY_ERRORS.before);
      }
      // One row past the page tells whether there is more (spec 4.5).
      const found = await selectAuditRows(db, { userId, filters: query.filters, before, limit: query.limit + 1 });
      const page = found.slice(0, query.limit);
      const last = page.at(-1);
      const hasMore = found.length > query.limit && last !== undefined;
      return {
        rows: page.map((entry) => entry.row),
        hasMore,
        next: hasMore ? (await cursorCodec()).encode(last.position) : null,
      };
    },
  };
}
