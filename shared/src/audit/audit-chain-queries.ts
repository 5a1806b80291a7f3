import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import { canonicalJson, createChainLinker, rowScalarsJson } from './audit-chain-fns.ts';
import type { QueuedAuditRow } from './audit-types.ts';
import { encodePgArray } from './pg-binary-array.ts';

export type Queryable = Pick<DatabasePool, 'query' | 'one'>;

/** `created_at` as the chain reads it: UTC to the microsecond, the precision Postgres stores. */
export const MICROSECOND_UTC = sql.fragment`'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * The last row of the chain: its place (0 before the first row), id, hash (hex) and created_at; and the
 * chain's identity: its random id and its first row's hash (null before place 1 is written).
 */
export type ChainHead = { seq: number; id: number | null; hash: string; createdAt: string | null; chainId: string; firstHash: string | null };

const HeadSchema = z.object({
  seq: z.number(),
  id: z.number().nullable(),
  hash: z.string(),
  created_at: z.string().nullable(),
  chain_id: z.string(),
  first_hash: z.string().nullable(),
});
const toHead = (row: z.infer<typeof HeadSchema>): ChainHead => ({
  seq: row.seq,
  id: row.id,
  hash: row.hash,
  createdAt: row.created_at,
  chainId: row.chain_id,
  firstHash: row.first_hash,
});

export async function readChainHead(db: Pick<DatabasePool, 'one'>, options: { lock?: boolean } = {}): Promise<ChainHead> {
  const row = await db.one(sql.type(HeadSchema)`
    SELECT head_seq AS seq, head_id AS id, encode(head_hash, 'hex') AS hash,
           to_char(head_created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at,
           chain_id, encode(first_hash, 'hex') AS first_hash
    FROM audit_chain ${options.lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
  return toHead(row);
}

const AllocationSchema = z.object({ created_at: z.string(), ids: z.string() });

/**
 * Ids for the batch, ascending, and its `created_at`: the transaction's time, but never before the head's,
 * so the ledger's order (created_at, id) is the chain's order even if the clock steps back.
 */
async function allocate(tx: Pick<DatabasePool, 'one'>, count: number, head: ChainHead): Promise<{ ids: number[]; createdAt: string }> {
  const row = await tx.one(sql.type(AllocationSchema)`
    SELECT to_char(greatest(now(), ${head.createdAt}::timestamptz) AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at,
           (SELECT array_to_string(array_agg(nextval('audit_log_id_seq')), ',') FROM generate_series(1, ${count})) AS ids`);
  return { ids: row.ids.split(',').map(Number), createdAt: row.created_at };
}

/** The next rows of the chain once its head is locked: ids in queue order, one `created_at`, each row's link. */
export type BatchLinker = {
  readonly ids: readonly number[];
  readonly createdAt: string;
  /** The row's place (chain_seq) and its link in hex; rows must be linked in order, index 0 first. */
  link(row: QueuedAuditRow, canonicalArgs: string, index: number): { seq: number; hash: string };
  /** The head after the last row linked, and the chain's first hash when this batch starts the chain. */
  finish(): { next: ChainHead; first: string | null };
};

/**
 * Locks the chain's head and gives the batch its ids and `created_at` (two round trips, in this order, so
 * that ids follow the chain's order whoever writes). The links themselves need no database: `link` is
 * one HMAC a row over content whose canonical args were computed before the lock (`canonicalArgsOf`).
 */
export async function lockChainForBatch(tx: Queryable, count: number, key: Buffer | null): Promise<{ head: ChainHead; linker: BatchLinker | null }> {
  const head = await readChainHead(tx, { lock: true });
  if (count === 0) return { head, linker: null };
  const { ids, createdAt } = await allocate(tx, count, head);
  const linkOf = createChainLinker(key, createdAt);
  let previous = head.hash;
  let firstHex: string | null = null;
  return {
    head,
    linker: {
      ids,
      createdAt,
      link(row, canonicalArgs, index) {
        const seq = head.seq + index + 1;
        previous = linkOf(previous, { seq, id: ids[index] ?? Number.NaN, scalarsJson: rowScalarsJson(row) }, canonicalArgs);
        if (seq === 1) firstHex = previous;
        return { seq, hash: previous };
      },
      finish() {
        // A head at place 0 is an empty chain: this batch's first row is the chain's first row, and the chain
        // gets its id now, so databases cloned from one empty template (or migrated alike) do not share one.
        const chainId = head.seq === 0 ? randomUUID() : head.chainId;
        const next: ChainHead = { seq: head.seq + count, id: ids.at(-1) ?? null, hash: previous, createdAt, chainId, firstHash: firstHex ?? head.firstHash };
        return { next, first: firstHex };
      },
    },
  };
}

/**
 * Each row's args in canonical form (`canonicalJson`), computed before the head is locked. Throws if an
 * `argsJson` is not JSON, so a bad row fails its batch before anything is written.
 */
export const canonicalArgsOf = (rows: readonly QueuedAuditRow[]): string[] => rows.map((row) => canonicalJson(JSON.parse(row.argsJson) as unknown));

/** Moves the head to the batch's last row, in the transaction that wrote the batch. */
export async function advanceChainHead(tx: Queryable, head: ChainHead, done: { next: ChainHead; first: string | null }, key: Buffer | null): Promise<void> {
  const { next, first } = done;
  await tx.query(sql.unsafe`
    UPDATE audit_chain
    SET head_seq = ${next.seq}, head_id = ${next.id}, head_hash = decode(${next.hash}, 'hex'),
        head_created_at = ${next.createdAt}::timestamptz, updated_at = now(),
        chain_id = ${next.chainId}, first_hash = coalesce(decode(${first}::text, 'hex'), first_hash),
        first_keyed_seq = ${head.seq === 0 ? (key === null ? null : 1) : sql.fragment`coalesce(first_keyed_seq, ${key === null ? null : head.seq + 1}::int8)`}`);
}

/**
 * Writes a batch as the next links of the hash chain, with ONE INSERT (design 4.6). Must run inside a
 * transaction: it locks the chain's head row first, so flushes are chained in the order they commit,
 * whoever writes them, and a flush that fails leaves the head where it was (a lost batch is a counted
 * drop, not a break). Each row's hash covers every column, `id` and `created_at` included, so both are
 * chosen here rather than by column defaults. With `key` (the chain key, design 8.4) each link is an
 * HMAC under it, which no one who can only write the database can compute; without it, the old unkeyed
 * link. Throws before writing anything if an `argsJson` is not JSON. Resolves to the rows written and the
 * new head. The audit-writer streams its flushes with COPY instead (`copyChainedAuditRows`).
 */
export async function insertChainedAuditRows(
  tx: Queryable,
  rows: readonly QueuedAuditRow[],
  options: { key?: Buffer | null } = {},
): Promise<{ written: number; head: ChainHead }> {
  const key = options.key ?? null;
  const canonical = canonicalArgsOf(rows);
  const { head, linker } = await lockChainForBatch(tx, rows.length, key);
  if (!linker) return { written: 0, head };
  const hashes: Buffer[] = [];
  const seqs: number[] = [];
  rows.forEach((row, index) => {
    const { seq, hash } = linker.link(row, canonical[index] ?? 'null', index);
    hashes.push(Buffer.from(hash, 'hex'));
    seqs.push(seq);
  });
  const { ids, createdAt } = linker;
  const text = (pick: (row: QueuedAuditRow) => string | null) =>
    sql.fragment`unnest(${sql.binary(encodePgArray('text', rows.map(pick)))}::text[])`;
  const int8 = (values: readonly number[]) => sql.fragment`unnest(${sql.binary(encodePgArray('int8', values))}::int8[])`;
  // `unnest` in the select list reads the arrays in lockstep without materialising the batch (see decisions.md).
  const result = await tx.query(sql.unsafe`
    INSERT INTO audit_log
      (id, chain_seq, row_hash, user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at)
    SELECT
      ${int8(ids)},
      ${int8(seqs)},
      unnest(${sql.binary(encodePgArray('bytea', hashes))}::bytea[]),
      ${int8(rows.map((row) => row.userId))},
      ${text((row) => row.agentId)},
      ${text((row) => row.tool)},
      ${text((row) => row.sector)},
      ${text((row) => row.decision)},
      ${text((row) => row.denyReason)},
      ${text((row) => row.argsJson)}::jsonb,
      unnest(${sql.binary(encodePgArray('int4', rows.map((row) => row.resultCount)))}::int4[]),
      ${text((row) => row.outcome)},
      ${text((row) => row.requestId)},
      ${createdAt}::timestamptz`);
  const done = linker.finish();
  await advanceChainHead(tx, head, done, key);
  return { written: result.rowCount, head: done.next };
}
