import { createHash } from 'node:crypto';

/**
 * Every column of a chained audit row, as both the writer and the verifier see it. `createdAt` is UTC
 * to the microsecond (`YYYY-MM-DDTHH:MM:SS.ffffffZ`), the precision Postgres stores; `args` is the
 * parsed JSON value.
 */
export type ChainedRowContent = {
  seq: number;
  id: number;
  userId: number;
  agentId: string | null;
  tool: string;
  sector: string | null;
  decision: string;
  denyReason: string | null;
  args: unknown;
  resultCount: number;
  outcome: string;
  requestId: string;
  createdAt: string;
};

/** Bumped if the canonical form ever changes, so that an old chain is never read with new rules. */
const CANONICAL_VERSION = 1;

/**
 * JSON with object keys sorted, at every depth. Postgres keeps `args` as jsonb, which forgets the key
 * order and spacing it was given, so the hash is taken over the value, not over the text sent.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // Loops and concatenation rather than map/join: this runs for every row of a verification.
  if (Array.isArray(value)) {
    let out = '[';
    for (let index = 0; index < value.length; index += 1) out += (index === 0 ? '' : ',') + canonicalJson(value[index]);
    return `${out}]`;
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  if (keys.length > 1) keys.sort();
  let out = '{';
  for (let index = 0; index < keys.length; index += 1) {
    const key = keys[index] as string;
    out += `${index === 0 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(object[key])}`;
  }
  return `${out}}`;
}

/**
 * The bytes a row's hash covers: every column but the hash itself. The scalar columns go in one JSON
 * array (which cannot hold a raw newline), then a newline, then the canonical args.
 */
export function canonicalRowText(row: ChainedRowContent): string {
  const scalars = [
    CANONICAL_VERSION,
    row.seq,
    row.id,
    row.userId,
    row.agentId,
    row.tool,
    row.sector,
    row.decision,
    row.denyReason,
    row.resultCount,
    row.outcome,
    row.requestId,
    row.createdAt,
  ];
  return `${JSON.stringify(scalars)}\n${canonicalJson(row.args)}`;
}

/** SHA-256 of the previous row's hash followed by this row's canonical content. */
export function chainHash(previous: Buffer, row: ChainedRowContent): Buffer {
  return createHash('sha256').update(previous).update(canonicalRowText(row), 'utf8').digest();
}
