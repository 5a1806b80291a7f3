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

/** Tuples for `COPY audit_log (AUDIT_COPY_COLUMNS) FROM STDIN (FORMAT binary)`, all with the one `created_at`. */
export function encodeAuditCopyRows(rows: readonly CopyAuditRow[], createdAt: Buffer): Buffer {
  let bound = 0;
  for (const { row } of rows) {
    const text = (row.agentId?.length ?? 0) + row.tool.length + (row.sector?.length ?? 0) + row.decision.length + (row.denyReason?.length ?? 0) + row.argsJson.length + row.outcome.length + row.requestId.length;
    // Field count, 14 lengths, three int8, the hash, int4, the timestamp, jsonb's version byte, the text.
    bound += 2 + FIELDS * 4 + 3 * 8 + HASH_BYTES + 4 + 8 + 1 + text * MAX_BYTES_PER_UNIT;
  }
  const buffer = Buffer.allocUnsafe(bound);
  let offset = 0;
  const int8 = (value: number) => {
    // Two 32-bit halves: exact for safe integers, and no BigInt per field.
    const high = Math.floor(value / 2 ** 32);
    offset = buffer.writeInt32BE(8, offset);
    offset = buffer.writeInt32BE(high, offset);
    offset = buffer.writeUInt32BE(value - high * 2 ** 32, offset);
  };
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
  const bytes = (value: Buffer) => {
    offset = buffer.writeInt32BE(value.length, offset);
    offset += value.copy(buffer, offset);
  };
  const hash32 = (value: string) => {
    offset = buffer.writeInt32BE(HASH_BYTES, offset);
    if (value.length !== 2 * HASH_BYTES || buffer.write(value, offset, HASH_BYTES, 'hex') !== HASH_BYTES) throw new RangeError('a row hash is not 32 bytes in hex');
    offset += HASH_BYTES;
  };
  for (const { id, seq, hash, row } of rows) {
    if (!Number.isSafeInteger(id) || !Number.isSafeInteger(seq) || !Number.isSafeInteger(row.userId)) throw new RangeError('an audit row id, place or user id is not a safe integer');
    offset = buffer.writeInt16BE(FIELDS, offset);
    int8(id);
    int8(seq);
    hash32(hash);
    int8(row.userId);
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
    bytes(createdAt);
  }
  return buffer.subarray(0, offset);
}
