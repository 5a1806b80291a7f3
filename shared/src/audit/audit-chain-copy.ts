import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { postgresText } from '../db/index.ts';
import { advanceChainHead, lockChainForBatch, type ChainHead, type Queryable } from './audit-chain-queries.ts';
import { AUDIT_COPY_COLUMNS, COPY_BINARY_HEADER, COPY_BINARY_TRAILER, encodeAuditCopyTuples, timestamptzBinary } from './audit-copy-binary.ts';
import type { ReadChunk } from './audit-queue-read.ts';


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

/** A batch as the audit-writer read it (`createQueueReader`), and which of each chunk's readable rows to write, in order. */
export type ReadBatch = { chunks: readonly ReadChunk[]; picked: ReadonlyArray<readonly number[]> };

/**
 * The audit-writer's flush (issue 44): the same rows, places, ids, `created_at` and links as
 * `insertChainedAuditRows`, written with one binary COPY instead of one INSERT, for a batch already read
 * (`createQueueReader`): the rows' scalars, canonical args and own COPY fields were computed before the
 * head is locked, so what is left is each row's link and its place in the tuple. A chunk is sent as soon
 * as it is linked, so Postgres stores one chunk while the next is linked. Must run inside a transaction on
 * `client`; after a failure the connection is in an unknown state and must be discarded, not reused (the
 * server then rolls the transaction back).
 */
export async function copyReadAuditBatch(client: pg.ClientBase, batch: ReadBatch, options: { key?: Buffer | null } = {}): Promise<{ written: number; head: ChainHead }> {
  const key = options.key ?? null;
  const tx = statementsOn(client);
  const count = batch.picked.reduce((sum, picked) => sum + picked.length, 0);
  const { head, linker } = await lockChainForBatch(tx, count, key);
  if (!linker) return { written: 0, head };
  const createdAt = timestamptzBinary(linker.createdAt);
  const stream = client.query(copyFrom(`COPY audit_log (${AUDIT_COPY_COLUMNS}) FROM STDIN (FORMAT binary)`));
  const done = finished(stream);
  // Awaited below; until then a server-side failure must not surface as an unhandled rejection.
  done.catch(() => undefined);
  stream.write(COPY_BINARY_HEADER);
  let index = 0;
  for (const [chunkIndex, chunk] of batch.chunks.entries()) {
    const picked = batch.picked[chunkIndex] ?? [];
    if (picked.length === 0) continue;
    const places = { ids: [] as number[], seqs: [] as number[], hashes: [] as string[] };
    for (const row of picked) {
      const { seq, hash } = linker.linkScalars(chunk.scalars[row] ?? '', chunk.canonical[row] ?? 'null', index);
      places.ids.push(linker.ids[index] ?? Number.NaN);
      places.seqs.push(seq);
      places.hashes.push(hash);
      index += 1;
    }
    if (!stream.write(encodeAuditCopyTuples(places, chunk.fields, picked, createdAt))) await Promise.race([once(stream, 'drain'), done]);
  }
  stream.end(COPY_BINARY_TRAILER);
  await done;
  const finishedHead = linker.finish();
  await advanceChainHead(tx, head, finishedHead, key);
  return { written: stream.rowCount, head: finishedHead.next };
}
