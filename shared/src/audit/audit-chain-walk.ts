import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import { MICROSECOND_UTC } from './audit-chain-queries.ts';
import type { ChainedRowContent } from './audit-chain-fns.ts';

/** A stored row as the chain walk reads it: its content, and its place and hash as stored (null when absent). */
export type WalkedRow = Omit<ChainedRowContent, 'seq'> & { seq: number | null; hash: string | null };

/** A position in the ledger's order (created_at, id); `createdAt` to the microsecond. */
export type LedgerPosition = { createdAt: string; id: number };

const StoredRowSchema = z.object({
  id: z.number(),
  user_id: z.number(),
  chain_seq: z.number().nullable(),
  row_hash: z.string().nullable(),
  agent_id: z.string().nullable(),
  tool: z.string(),
  sector: z.string().nullable(),
  decision: z.string(),
  deny_reason: z.string().nullable(),
  args: z.unknown(),
  result_count: z.number(),
  outcome: z.string(),
  request_id: z.string(),
  created_at: z.string(),
});
type StoredRow = z.infer<typeof StoredRowSchema>;

const toWalked = (row: StoredRow): WalkedRow => ({
  seq: row.chain_seq,
  hash: row.row_hash,
  id: row.id,
  userId: row.user_id,
  agentId: row.agent_id,
  tool: row.tool,
  sector: row.sector,
  decision: row.decision,
  denyReason: row.deny_reason,
  args: row.args,
  resultCount: row.result_count,
  outcome: row.outcome,
  requestId: row.request_id,
  createdAt: row.created_at,
});

/**
 * Every user id present, by a loose scan of the (user_id, created_at) index: one short index probe per
 * user, however many rows there are.
 */
async function listUserIds(db: DatabasePool): Promise<number[]> {
  const rows = await db.any(sql.unsafe`
    WITH RECURSIVE users AS (
      (SELECT user_id FROM audit_log ORDER BY user_id LIMIT 1)
      UNION ALL
      SELECT (SELECT user_id FROM audit_log WHERE user_id > users.user_id ORDER BY user_id LIMIT 1)
      FROM users WHERE users.user_id IS NOT NULL
    )
    SELECT user_id FROM users WHERE user_id IS NOT NULL`);
  return rows.map((row) => z.object({ user_id: z.number() }).parse(row).user_id);
}

/**
 * One page of a user's rows after a position, in the ledger's order. The plain bound lets the
 * (user_id, created_at DESC) index start at the position; the row comparison breaks ties within a flush.
 */
async function fetchPage(db: DatabasePool, userId: number, after: LedgerPosition | null, limit: number): Promise<WalkedRow[]> {
  const bound = after
    ? sql.fragment`AND created_at >= ${after.createdAt}::timestamptz AND (created_at, id) > (${after.createdAt}::timestamptz, ${after.id}::int8)`
    : sql.fragment``;
  // Not sql.type: the rows are checked below in bulk rather than by the pool's per-row parser, which
  // would cost more than the hashing on a long walk.
  const rows = await db.any(sql.unsafe`
    SELECT id, user_id, chain_seq, encode(row_hash, 'hex') AS row_hash, agent_id, tool, sector, decision,
           deny_reason, args, result_count, outcome, request_id,
           to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at
    FROM audit_log
    WHERE user_id = ${userId} ${bound}
    ORDER BY audit_log.created_at, audit_log.id
    LIMIT ${limit}`);
  const first = rows[0];
  if (first !== undefined) StoredRowSchema.parse(first);
  return (rows as readonly StoredRow[]).map(toWalked);
}

/** One user's rows after `after`, page by page, the next page fetched while this one is read. */
async function* userRows(db: DatabasePool, userId: number, after: LedgerPosition | null, pageSize: number): AsyncGenerator<WalkedRow> {
  let pending = fetchPage(db, userId, after, pageSize);
  try {
    for (;;) {
      const rows = await pending;
      const last = rows.at(-1);
      if (last === undefined) return;
      const full = rows.length === pageSize;
      if (full) pending = fetchPage(db, userId, { createdAt: last.createdAt, id: last.id }, pageSize);
      yield* rows;
      if (!full) return;
    }
  } finally {
    // A walk that stopped early leaves the page fetched ahead unread; its failure is of no interest.
    pending.catch(() => undefined);
  }
}

const before = (a: WalkedRow, b: WalkedRow) => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);

/**
 * Every row after `after` in the ledger's order (created_at, id), which the writer keeps equal to the
 * chain's order, in keyset pages over the one index spec 2.3 allows (there is no index on `id` alone).
 * Each user's rows come from the index in order and are merged, so a row written under another user id
 * is seen too. Memory: two pages per user id present.
 */
export async function* walkLedger(db: DatabasePool, after: LedgerPosition | null, pageSize: number): AsyncGenerator<WalkedRow> {
  const sources = (await listUserIds(db)).map((userId) => userRows(db, userId, after, pageSize));
  if (sources.length === 1 && sources[0]) {
    yield* sources[0];
    return;
  }
  try {
    const heads = await Promise.all(sources.map((source) => source.next()));
    for (;;) {
      let pick = -1;
      heads.forEach((head, index) => {
        const current = heads[pick];
        if (!head.done && (current === undefined || current.done || before(head.value, current.value))) pick = index;
      });
      if (pick < 0) return;
      // Only a reader with a row left is picked.
      yield (heads[pick] as IteratorYieldResult<WalkedRow>).value;
      heads[pick] = await (sources[pick] as AsyncGenerator<WalkedRow>).next();
    }
  } finally {
    // A walk stopped at a break closes every user's reader, so no page fetched ahead is left behind.
    await Promise.all(sources.map((source) => source.return(undefined)));
  }
}
