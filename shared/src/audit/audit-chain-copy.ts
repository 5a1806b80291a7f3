import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { postgresText } from '../db/index.ts';
import { COPY_CHUNK_ROWS, type CanonicalChunks } from './audit-canonical-args.ts';
import { advanceChainHead, lockChainForBatch, type ChainHead, type Queryable } from './audit-chain-queries.ts';
import { AUDIT_COPY_COLUMNS, COPY_BINARY_HEADER, COPY_BINARY_TRAILER, encodeAuditCopyRows, timestamptzBinary, type CopyAuditRow } from './audit-copy-binary.ts';
import type { QueuedAuditRow } from './audit-types.ts';


type Token = { sql: string; values: readonly unknown[]; parser?: { '~standard'?: { validate(value: unknown): unknown } } };

/**
 * Slonik's statements (`sql`…) run on a plain pg client, each row checked by its `sql.type` schema as the
 * pool's interceptor does: the chain's head is read and moved by the same statements on either route.
 */
export function statementsOn(client: pg.ClientBase): Queryable {
  const run = (token: Token) => client.query(postgresText(token.sql), token.values as unknown[]);
  const statements = {
    async query(token: Token) {
      const result = await run(token);
      return { rowCount: result.rowCount ?? 0, rows: result.rows, command: result.command, fields: result.fields, notices: [] };
    },
    async one(token: Token) {
      const { rows } = await run(token);
      if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
      const checked = token.parser?.['~standard']?.validate(rows[0]) as { value?: unknown; issues?: unknown } | undefined;
      if (checked === undefined) return rows[0];
      if (checked instanceof Promise || checked.issues) throw new TypeError('a row did not match its schema');
      return checked.value;
    },
  };
  // The two methods the chain's statements use, with slonik's result shape; nothing else is called.
  return statements as unknown as Queryable;
}

/**
 * The audit-writer's flush (issue 44): the same rows, places, ids, `created_at` and links as
 * `insertChainedAuditRows`, written with one binary COPY instead of one INSERT. The rows are linked a
 * chunk of `COPY_CHUNK_ROWS` at a time and each chunk is sent as soon as it is encoded, so Postgres stores
 * one chunk while the next is hashed (a chunk of a few hundred KB: one socket write). `canonicalArgs` are
 * the chunks' canonical args, started before the head is locked (`createCanonicalArgsHelper`). Must run
 * inside a transaction on `client`; after a failure the connection is in an unknown state and must be
 * discarded, not reused (the server then rolls the transaction back).
 */
export async function copyChainedAuditRows(
  client: pg.ClientBase,
  rows: readonly QueuedAuditRow[],
  canonicalArgs: CanonicalChunks,
  options: { key?: Buffer | null } = {},
): Promise<{ written: number; head: ChainHead }> {
  const key = options.key ?? null;
  const tx = statementsOn(client);
  const { head, linker } = await lockChainForBatch(tx, rows.length, key);
  if (!linker) return { written: 0, head };
  const createdAt = timestamptzBinary(linker.createdAt);
  const stream = client.query(copyFrom(`COPY audit_log (${AUDIT_COPY_COLUMNS}) FROM STDIN (FORMAT binary)`));
  const done = finished(stream);
  // Awaited below; until then a server-side failure must not surface as an unhandled rejection.
  done.catch(() => undefined);
  stream.write(COPY_BINARY_HEADER);
  for (let start = 0; start < rows.length; start += COPY_CHUNK_ROWS) {
    const canonical = await canonicalArgs[start / COPY_CHUNK_ROWS];
    if (canonical === undefined) throw new RangeError('a chunk of rows has no canonical args');
    const chunk: CopyAuditRow[] = [];
    for (let index = start; index < Math.min(rows.length, start + COPY_CHUNK_ROWS); index += 1) {
      const row = rows[index]!;
      const { seq, hash } = linker.link(row, canonical[index - start] ?? 'null', index);
      chunk.push({ id: linker.ids[index] ?? Number.NaN, seq, hash, row });
    }
    if (!stream.write(encodeAuditCopyRows(chunk, createdAt))) await Promise.race([once(stream, 'drain'), done]);
  }
  stream.end(COPY_BINARY_TRAILER);
  await done;
  const finishedHead = linker.finish();
  await advanceChainHead(tx, head, finishedHead, key);
  return { written: stream.rowCount, head: finishedHead.next };
}

