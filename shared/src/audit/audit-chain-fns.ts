import { createHmac, hash } from 'node:crypto';
import { createTextDigest } from './audit-chain-hmac.ts';

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

/**
 * Bumped if the canonical form ever changes, so that an old chain is never read with new rules. Version 1
 * is the unkeyed chain (issue 22); version 2 is the same content linked with the chain key (issue 36), so
 * a keyed link can never be replayed as an unkeyed one or the other way round.
 */
const CANONICAL_VERSION = 1;
const KEYED_CANONICAL_VERSION = 2;

/** Printable ASCII: its UTF-16 length and order are its UTF-8 length and order. */
const ASCII = /^[ -~]*$/;

const compareAscii = (a: string, b: string): number => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/**
 * The key order of the canonical form: jsonb's own (shorter UTF-8 first, then bytewise). Values read back
 * from Postgres are then nearly always in canonical order already, and cost one native stringify.
 */
export function compareCanonicalKeys(a: string, b: string): number {
  if (ASCII.test(a) && ASCII.test(b)) return compareAscii(a, b);
  const [bytesA, bytesB] = [Buffer.from(a), Buffer.from(b)];
  return bytesA.length - bytesB.length || Buffer.compare(bytesA, bytesB);
}

/** Each key is tested for ASCII once, not at every comparison: this runs for every row written and read. */
const allAscii = (keys: readonly string[]) => keys.every((key) => ASCII.test(key));

/** An object's own keys in canonical order (`compareCanonicalKeys`). */
export function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
  return keys.length < 2 ? keys : keys.sort(allAscii(keys) ? compareAscii : compareCanonicalKeys);
}

function inCanonicalOrder(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) return value.every(inCanonicalOrder);
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  const compare = allAscii(keys) ? compareAscii : compareCanonicalKeys;
  for (let index = 0; index < keys.length; index += 1) {
    const key = keys[index] as string;
    if (index > 0 && compare(keys[index - 1] as string, key) >= 0) return false;
    if (!inCanonicalOrder(object[key])) return false;
  }
  return true;
}

/** Array-index-like keys, which JavaScript always lists first whatever the insertion order. */
const INDEX_KEY = /^(0|[1-9]\d{0,9})$/;

/** A copy with every object's keys inserted in canonical order; null if a key's order cannot be kept so. */
function reordered(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      const copy = reordered(item);
      if (copy === null && item !== null) return null;
      out.push(copy);
    }
    return out;
  }
  const object = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of sortedKeys(object)) {
    // Assigning "__proto__" would set the prototype, not a key.
    if (INDEX_KEY.test(key) || key === '__proto__') return null;
    const copy = reordered(object[key]);
    if (copy === null && object[key] !== null) return null;
    out[key] = copy;
  }
  return out;
}

/** The canonical text built piece by piece: for objects whose key order JavaScript would not keep (index-like keys, "__proto__"). */
function builtCanonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(builtCanonical).join(',')}]`;
  const object = value as Record<string, unknown>;
  const keys = sortedKeys(object);
  return `{${keys.map((key) => `${JSON.stringify(key)}:${builtCanonical(object[key])}`).join(',')}}`;
}

/**
 * JSON with no spacing and every object's keys in canonical order, at every depth. Postgres keeps `args`
 * as jsonb, which forgets the key order and spacing it was given, so the hash is taken over the value,
 * not over the text sent. Three routes to the same text, fastest first: the value is already in order
 * (as read back from jsonb); a reordered copy (as sent by a producer); built by hand (index-like keys).
 */
export function canonicalJson(value: unknown): string {
  if (inCanonicalOrder(value)) return JSON.stringify(value) ?? 'null';
  const copy = reordered(value);
  return copy === null ? builtCanonical(value) : JSON.stringify(copy);
}

/**
 * The bytes a row's hash covers: every column but the hash itself. The scalar columns go in one JSON
 * array (which cannot hold a raw newline), then a newline, then the canonical args.
 */
export function canonicalRowText(row: ChainedRowContent, version: number = CANONICAL_VERSION): string {
  return canonicalRowTextWith(row, canonicalJson(row.args), version);
}

/** The scalar columns a row has before the chain places it (all but version, seq, id and createdAt). */
export type RowScalars = Pick<ChainedRowContent, 'userId' | 'agentId' | 'tool' | 'sector' | 'decision' | 'denyReason' | 'resultCount' | 'outcome' | 'requestId'>;

/** A row's scalars as the items of its canonical JSON array between `id` and `createdAt`, in that array's order. */
export function rowScalarsJson(row: RowScalars): string {
  const json = JSON.stringify([row.userId, row.agentId, row.tool, row.sector, row.decision, row.denyReason, row.resultCount, row.outcome, row.requestId]);
  return json.slice(1, -1);
}

/** A number as an item of a JSON array: JSON writes a non-finite one as null. */
const jsonItem = (value: number): string => (Number.isFinite(value) ? String(value) : 'null');

/**
 * `canonicalRowText` from its parts, written in order with `write`: `scalarsJson` from `rowScalarsJson`,
 * `createdAtJson` the JSON string of `createdAt` (one a batch). The text is `JSON.stringify` of the same
 * array, then a newline and the args, built without an array a row.
 */
function writeCanonicalRowText(write: (part: string) => void, version: number, seq: number, id: number, scalarsJson: string, createdAtJson: string, canonicalArgs: string): void {
  write(`[${jsonItem(version)},${jsonItem(seq)},${jsonItem(id)},`);
  write(scalarsJson);
  write(`,${createdAtJson}]\n`);
  write(canonicalArgs);
}

/** `canonicalRowText` with the canonical args already computed (`canonicalJson`). */
export function canonicalRowTextWith(row: Omit<ChainedRowContent, 'args'>, canonicalArgs: string, version: number = CANONICAL_VERSION): string {
  let text = '';
  writeCanonicalRowText((part) => (text += part), version, row.seq, row.id, rowScalarsJson(row), JSON.stringify(row.createdAt), canonicalArgs);
  return text;
}

/**
 * A row's hash, in hex: SHA-256 of the previous row's hash (hex), a newline and this row's canonical
 * content, as UTF-8. One string in, so one native call a row (and easy to recompute by other means).
 */
export function chainHash(previousHex: string, row: ChainedRowContent): string {
  return hash('sha256', `${previousHex}\n${canonicalRowText(row)}`, 'hex');
}

/**
 * A keyed row's link, in hex: HMAC-SHA-256 under the chain key of the same text as `chainHash` (version 2).
 * Whoever can only write the database cannot compute it, so cannot append, replace or re-chain a row.
 */
export function keyedChainHash(key: Buffer, previousHex: string, row: ChainedRowContent): string {
  return createHmac('sha256', key).update(`${previousHex}\n${canonicalRowText(row, KEYED_CANONICAL_VERSION)}`).digest('hex');
}

/** The link the writer writes: keyed when it holds the chain key, else the old unkeyed one. */
export const chainLink = (key: Buffer | null, previousHex: string, row: ChainedRowContent): string =>
  key === null ? chainHash(previousHex, row) : keyedChainHash(key, previousHex, row);

/** A row of a batch as the linker sees it: its place and id, and its scalars' JSON (`rowScalarsJson`). */
export type LinkedRow = { seq: number; id: number; scalarsJson: string };

/**
 * The writer's link function for one key and one batch's `created_at`: the padded key is computed once
 * (`createTextDigest`), not once a row, each row's canonical args and scalars come precomputed, and the
 * text's parts are written straight into the digest's buffer (no joined string), so the only work left
 * per row while the head is locked is those writes and its MAC (or SHA-256 without a key). Same links as
 * `chainLink`: the same text, and HMAC-SHA-256's bytes.
 */
export function createChainLinker(key: Buffer | null, createdAt: string): (previousHex: string, row: LinkedRow, canonicalArgs: string) => string {
  const version = key === null ? CANONICAL_VERSION : KEYED_CANONICAL_VERSION;
  const createdAtJson = JSON.stringify(createdAt);
  const digest = createTextDigest(key);
  const write = (part: string) => digest.write(part);
  return (previousHex, row, canonicalArgs) => {
    digest.write(previousHex);
    digest.write('\n');
    writeCanonicalRowText(write, version, row.seq, row.id, row.scalarsJson, createdAtJson, canonicalArgs);
    return digest.digest();
  };
}
