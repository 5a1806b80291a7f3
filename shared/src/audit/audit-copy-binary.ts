import type { QueuedAuditRow } from './audit-types.ts';

/**
 * `audit_log` rows in Postgres's binary COPY format, for the audit-writer's one COPY a flush (issue 44):
 * each field is a length and its bytes, so nothing is escaped in JavaScript and nothing is parsed back
 * from text by the server (jsonb excepted, which Postgres parses whatever the route).
 */
export const AUDIT_COPY_COLUMNS =
  'id, chain_seq, row_hash, user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at';

/** Signature, flags (none) and header extension length (0). */
export const COPY_BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** A field count of -1 ends the data. */
export const COPY_BINARY_TRAILER = Buffer.from([0xff, 0xff]);

const FIELDS = 14;
/** A link is a SHA-256 or HMAC-SHA-256 digest. */
const HASH_BYTES = 32;
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);
/** jsonb's binary input: a version byte, then the JSON text. */
const JSONB_VERSION = 1;

/** A `created_at` as the chain writes it (`YYYY-MM-DDTHH:MM:SS.ffffffZ`) as timestamptz's binary form: microseconds since 2000-01-01 UTC. */
export function timestamptzBinary(createdAt: string): Buffer {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})Z$/.exec(createdAt);
  if (!match) throw new RangeError(`${createdAt} is not a UTC time to the microsecond`);
  const seconds = (Date.parse(`${match[1]}Z`) - POSTGRES_EPOCH_MS) / 1000;
  const buffer = Buffer.alloc(8);
  buffer.writeBigInt64BE(BigInt(seconds) * 1_000_000n + BigInt(match[2]!), 0);
  return buffer;
}

/** `hash`: the row's link in hex, as `BatchLinker.link` gives it; written as its 32 bytes. */
export type CopyAuditRow = { id: number; seq: number; hash: string; row: QueuedAuditRow };

/** UTF-16 units to the most UTF-8 bytes they can take. */
const MAX_BYTES_PER_UNIT = 3;
/** What a tuple holds before its row's own fields: the field count, then id, chain_seq (int8) and row_hash, each with its length. */
const PLACE_BYTES = 2 + 2 * (4 + 8) + 4 + HASH_BYTES;
/** `created_at`, the tuple's last field: its length and 8 bytes. */
const CREATED_AT_BYTES = 4 + 8;

/** Rows' own fields in binary COPY form (`encodeAuditRowFields`): row i's end at `ends[i]`. */
export type EncodedRowFields = { bytes: Uint8Array<ArrayBuffer>; ends: Uint32Array<ArrayBuffer> };

/**
 * Rows' own fields, `user_id` to `request_id` in `AUDIT_COPY_COLUMNS`' order, in binary COPY form, one row
 * after another: row i's fields end at `ends[i]`. They need nothing the chain gives a row (its id, place,
 * link and `created_at`), so they can be encoded before the chain's head is locked, off the writer's
 * thread (`readQueueChunk`). The bytes are their own ArrayBuffer, so they can be transferred to another thread.
 */
export function encodeAuditRowFields(rows: readonly QueuedAuditRow[]): EncodedRowFields {
  let bound = 0;
  for (const row of rows) {
    const text = (row.agentId?.length ?? 0) + row.tool.length + (row.sector?.length ?? 0) + row.decision.length + (row.denyReason?.length ?? 0) + row.argsJson.length + row.outcome.length + row.requestId.length;
    // 10 lengths, int8, int4, jsonb's version byte, the text.
    bound += 10 * 4 + 8 + 4 + 1 + text * MAX_BYTES_PER_UNIT;
  }
  const memory = new ArrayBuffer(bound);
  const buffer = Buffer.from(memory);
  const ends = new Uint32Array(rows.length);
  let offset = 0;
  const text = (value: string | null, prefix?: number) => {
    if (value === null) {
      offset = buffer.writeInt32BE(-1, offset);
      return;
    }
    const start = offset + 4;
    let at = start;
    if (prefix !== undefined) at = buffer.writeUInt8(prefix, at);
    at += buffer.write(value, at, 'utf8');
    buffer.writeInt32BE(at - start, offset);
    offset = at;
  };
  rows.forEach((row, index) => {
    if (!Number.isSafeInteger(row.userId)) throw new RangeError('an audit row id, place or user id is not a safe integer');
    offset = writeInt8(buffer, row.userId, offset);
    text(row.agentId);
    text(row.tool);
    text(row.sector);
    text(row.decision);
    text(row.denyReason);
    text(row.argsJson, JSONB_VERSION);
    offset = buffer.writeInt32BE(4, offset);
    offset = buffer.writeInt32BE(row.resultCount, offset);
    text(row.outcome);
    text(row.requestId);
    ends[index] = offset;
  });
  return { bytes: new Uint8Array(memory, 0, offset), ends };
}

/** An int8 field: its length, then two 32-bit halves (exact for safe integers, and no BigInt per field). */
function writeInt8(buffer: Buffer, value: number, offset: number): number {
  const high = Math.floor(value / 2 ** 32);
  let at = buffer.writeInt32BE(8, offset);
  at = buffer.writeInt32BE(high, at);
  return buffer.writeUInt32BE(value - high * 2 ** 32, at);
}

/** The chain's part of each tuple, in the order the rows are written: ids, places and links (hex). */
export type ChainPlaces = { ids: readonly number[]; seqs: readonly number[]; hashes: readonly string[] };

/**
 * Whole tuples for `COPY audit_log (AUDIT_COPY_COLUMNS) FROM STDIN (FORMAT binary)`: for each of `picked`
 * (indices into `fields`, in order), its id, place and link from `places` (the k-th picked row takes the
 * k-th of each), its own fields as `encodeAuditRowFields` encoded them, and the one `created_at`.
 */
export function encodeAuditCopyTuples(places: ChainPlaces, fields: EncodedRowFields, picked: readonly number[], createdAt: Buffer): Buffer {
  let bound = 0;
  for (const index of picked) bound += PLACE_BYTES + fieldsEnd(fields, index) - fieldsStart(fields, index) + CREATED_AT_BYTES;
  const buffer = Buffer.allocUnsafe(bound);
  const source = Buffer.from(fields.bytes.buffer, fields.bytes.byteOffset, fields.bytes.byteLength);
  let offset = 0;
  picked.forEach((index, k) => {
    const id = places.ids[k] ?? Number.NaN;
    const seq = places.seqs[k] ?? Number.NaN;
    const hash = places.hashes[k] ?? '';
    if (!Number.isSafeInteger(id) || !Number.isSafeInteger(seq)) throw new RangeError('an audit row id, place or user id is not a safe integer');
    offset = buffer.writeInt16BE(FIELDS, offset);
    offset = writeInt8(buffer, id, offset);
    offset = writeInt8(buffer, seq, offset);
    offset = buffer.writeInt32BE(HASH_BYTES, offset);
    if (hash.length !== 2 * HASH_BYTES || buffer.write(hash, offset, HASH_BYTES, 'hex') !== HASH_BYTES) throw new RangeError('a row hash is not 32 bytes in hex');
    offset += HASH_BYTES;
    offset += source.copy(buffer, offset, fieldsStart(fields, index), fieldsEnd(fields, index));
    offset = buffer.writeInt32BE(createdAt.length, offset);
    offset += createdAt.copy(buffer, offset);
  });
  return buffer.subarray(0, offset);
}

const fieldsStart = (fields: { ends: Uint32Array }, index: number): number => (index === 0 ? 0 : (fields.ends[index - 1] ?? 0));
const fieldsEnd = (fields: { ends: Uint32Array }, index: number): number => {
  const end = fields.ends[index];
  if (end === undefined) throw new RangeError(`no encoded row ${index}`);
  return end;
};

/** Tuples for `COPY audit_log (AUDIT_COPY_COLUMNS) FROM STDIN (FORMAT binary)`, all with the one `created_at`. */
export function encodeAuditCopyRows(rows: readonly CopyAuditRow[], createdAt: Buffer): Buffer {
  const places = { ids: rows.map((row) => row.id), seqs: rows.map((row) => row.seq), hashes: rows.map((row) => row.hash) };
  return encodeAuditCopyTuples(places, encodeAuditRowFields(rows.map(({ row }) => row)), rows.map((_, index) => index), createdAt);
}
