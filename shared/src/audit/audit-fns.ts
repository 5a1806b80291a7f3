import { randomUUID } from 'node:crypto';
import { sortedKeys } from './audit-chain-fns.ts';
import {
  AUDIT_ARGS_MAX_BYTES,
  AuditEventSchema,
  INT4_MAX,
  REDACTED_VALUE,
  TRUNCATED_ARGS,
  OPERATOR_USER_ID,
  type AuditEvent,
  type QueuedAuditRow,
} from './audit-types.ts';

/** Spec 8: a field whose name contains one of these, in any case, has its value replaced. */
export const SENSITIVE_NAME_WORDS = ['pass', 'secret', 'token', 'key', 'authorization', 'cookie'] as const;
const SENSITIVE_NAME = new RegExp(SENSITIVE_NAME_WORDS.join('|'), 'i');

export function isSensitiveFieldName(name: string): boolean {
  return SENSITIVE_NAME.test(name);
}

/** Thrown by `redactArgs` for values JSON cannot carry faithfully: cycles, BigInt, functions, symbols. */
export class UnserializableArgsError extends Error {
  override name = 'UnserializableArgsError';
}

/** Thrown by `redactArgs` as soon as the output is certain to exceed its size budget. */
export class ArgsTooLargeError extends Error {
  override name = 'ArgsTooLargeError';
}

type Walk = { ancestors: Set<object>; size: number; budget: number };

function grow(walk: Walk, units: number): void {
  walk.size += units;
  if (walk.size > walk.budget) throw new ArgsTooLargeError('args exceed the audit size budget');
}

/**
 * The value JSON.stringify would see: `toJSON()` applied (dates), boxed primitives unboxed.
 * Returns `undefined` for what JSON leaves out of an object (undefined itself).
 */
function jsonView(value: unknown, key: string): unknown {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  if (value instanceof String || value instanceof Number || value instanceof Boolean) return value.valueOf();
  return value;
}

function walkValue(raw: unknown, key: string, walk: Walk): unknown {
  const value = jsonView(raw, key);
  switch (typeof value) {
    case 'string':
      grow(walk, value.length + 2);
      return value;
    case 'number':
      grow(walk, 1);
      return value;
    case 'boolean':
      grow(walk, 4);
      return value;
    case 'undefined':
      return undefined;
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new UnserializableArgsError(`a ${typeof value} cannot be stored in the audit record`);
  }
  if (value === null) {
    grow(walk, 4);
    return null;
  }
  const object = value as object;
  if (walk.ancestors.has(object)) throw new UnserializableArgsError('cyclic args cannot be stored in the audit record');
  walk.ancestors.add(object);
  try {
    // Counted as JSON.stringify lays it out: brackets, commas between items, `"name":` before values.
    grow(walk, 2);
    if (Array.isArray(object)) {
      const out: unknown[] = [];
      for (let index = 0; index < object.length; index += 1) {
        if (index > 0) grow(walk, 1);
        const item = walkValue(object[index], String(index), walk);
        if (item === undefined) grow(walk, 4);
        out.push(item === undefined ? null : item);
      }
      return out;
    }
    const out: Record<string, unknown> = {};
    let fields = 0;
    // Built in the chain's canonical key order, so the writer's canonical form is a check and one
    // stringify, not a reordered copy (issue 44); jsonb keeps its own order whatever the text's.
    for (const name of sortedKeys(object)) {
      const field = (object as Record<string, unknown>)[name];
      if (field === undefined) continue;
      // Values under a sensitive name are never inspected, whatever they are.
      const sensitive = isSensitiveFieldName(name);
      const redacted = sensitive ? REDACTED_VALUE : walkValue(field, name, walk);
      if (redacted === undefined) continue;
      grow(walk, name.length + 3 + (fields > 0 ? 1 : 0) + (sensitive ? REDACTED_VALUE.length + 2 : 0));
      fields += 1;
      out[name] = redacted;
    }
    return out;
  } finally {
    walk.ancestors.delete(object);
  }
}

/**
 * Spec 8 redaction as a pure function: a deep copy in which every field whose name contains `pass`,
 * `secret`, `token`, `key`, `authorization` or `cookie` (any case) holds `[redacted]`, through objects and
 * arrays at any depth. Values are never inspected. The copy is what JSON would carry (dates as strings,
 * undefined fields left out). Throws `UnserializableArgsError` for cycles, BigInt, functions and symbols,
 * and `ArgsTooLargeError` once the copy is sure to serialise to more than `budgetChars` characters.
 */
export function redactArgs(args: unknown, budgetChars = Number.POSITIVE_INFINITY): unknown {
  const walked = walkValue(args, '', { ancestors: new Set(), size: 0, budget: budgetChars });
  return walked === undefined ? {} : walked;
}

/**
 * Postgres refuses NUL (in text and in jsonb) and unpaired surrogates (in jsonb escapes). One such
 * character would fail the whole flush and lose every row in it, so they become U+FFFD.
 */
export function storableText(value: string): string {
  return value.toWellFormed().replaceAll('\u0000', '\uFFFD');
}

/** In JSON text from JSON.stringify, NUL and lone surrogates appear only as `\u` escapes. */
const UNSTORABLE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/gi;

/**
 * The JSON text stored in `args`: redacted, and `"[truncated]"` when it would exceed about 4 KB
 * (`AUDIT_ARGS_MAX_BYTES` of UTF-8) or cannot be serialised. Never throws.
 */
export function serializeAuditArgs(args: unknown, maxBytes = AUDIT_ARGS_MAX_BYTES): string {
  try {
    // A JSON string is never shorter in UTF-8 bytes than in UTF-16 units, so the unit count is a safe
    // early limit: a huge payload is abandoned without being walked or serialised whole.
    const json = JSON.stringify(redactArgs(args, maxBytes)).replace(UNSTORABLE_ESCAPE, '$1\\ufffd');
    return Buffer.byteLength(json, 'utf8') > maxBytes ? JSON.stringify(TRUNCATED_ARGS) : json;
  } catch {
    // Cyclic, BigInt, function, a throwing getter or toJSON, nesting too deep for the stack: all one answer.
    return JSON.stringify(TRUNCATED_ARGS);
  }
}

/** Lowercase identifiers only: a sector name, never a sentence such as a deny reason. */
const SECTOR_LIKE = /^[a-z][a-z0-9_-]{0,63}$/;
const TEXT_MAX_CHARS = 1024;

function cappedText(value: string): string {
  const clean = storableText(value);
  return clean.length > TEXT_MAX_CHARS ? `${clean.slice(0, TEXT_MAX_CHARS - 1)}…` : clean;
}

export type BuildAuditRowOptions = {
  /** Default `OPERATOR_USER_ID`. */
  userId?: number;
  /** Default `crypto.randomUUID`. */
  newRequestId?: () => string;
};

export type BuiltAuditRow = {
  row: QueuedAuditRow;
  /** Set when the event's sector was not a sector name (or repeated the deny reason) and was stored as null. */
  discardedSector?: string;
};

/**
 * Builds the queued row of spec 2.3 from a surface's event. `agent_id` is forced to null for `ingest`
 * and for a refused `initialize`; the sector column only ever holds a sector-like name; a missing
 * `request_id` is generated. Throws a zod error for an event that breaks `AuditEventSchema`.
 */
export function buildAuditRow(event: AuditEvent, options: BuildAuditRowOptions = {}): BuiltAuditRow {
  const parsed = AuditEventSchema.parse(event);
  const agentIsNull = parsed.tool === 'ingest' || (parsed.tool === 'initialize' && parsed.decision === 'deny');
  let sector = parsed.sector;
  let discardedSector: string | undefined;
  if (sector !== null && (!SECTOR_LIKE.test(sector) || sector === parsed.denyReason)) {
    discardedSector = sector;
    sector = null;
  }
  const requestId = parsed.requestId ? parsed.requestId : (options.newRequestId ?? randomUUID)();
  const row: QueuedAuditRow = {
    userId: options.userId ?? OPERATOR_USER_ID,
    agentId: agentIsNull || parsed.agentId === null ? null : cappedText(parsed.agentId),
    tool: cappedText(parsed.tool),
    sector,
    decision: parsed.decision,
    denyReason: parsed.denyReason === null ? null : cappedText(parsed.denyReason),
    argsJson: serializeAuditArgs(parsed.args),
    resultCount: Math.min(parsed.resultCount, INT4_MAX),
    outcome: parsed.outcome,
    requestId: cappedText(requestId),
  };
  return discardedSector === undefined ? { row } : { row, discardedSector };
}
