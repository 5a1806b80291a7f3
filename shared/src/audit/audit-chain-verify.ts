import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import type { AuditAnchor } from './audit-anchor.ts';
import { chainHash } from './audit-chain-fns.ts';
import { MICROSECOND_UTC, readChainHead } from './audit-chain-queries.ts';
import { walkLedger, type LedgerPosition, type WalkedRow } from './audit-chain-walk.ts';

/**
 * What broke the chain, named from the rows' stored places (chain_seq):
 * - `edited`: the row at its expected place no longer matches its hash;
 * - `removed`: the next row found sits further along than the expected place;
 * - `inserted`: a row with no chain hash, or one repeating a place already passed, or an extra row
 *   claiming the expected place, among the chained rows;
 * - `out_of_order`: the row holding the expected place comes after a later one (a swapped pair);
 * - `truncated`: the chain ends before the last anchor's row count (or the head the database records);
 * - `rewritten`: the chain is consistent but differs from the anchor at the anchor's row.
 */
export const CHAIN_BREAK_KINDS = ['edited', 'removed', 'inserted', 'out_of_order', 'truncated', 'rewritten'] as const;
export type ChainBreakKind = (typeof CHAIN_BREAK_KINDS)[number];

export type ChainBreak = {
  kind: ChainBreakKind;
  /** The chain place where the break was found (the first place not proven intact). */
  row: number;
  /** The id of the offending row, when there is one. */
  id: number | null;
  detail: string;
};

export type AuditChainReport = {
  intact: boolean;
  /** The last row proven intact: its place in the chain (0: none) and id. */
  intactThrough: { row: number; id: number | null };
  break: ChainBreak | null;
  /** Rows written before the chain began, as the migration counted them; not covered by it. */
  rowsBeforeChain: number;
  /** Rows of the chain as the database's head record says, read when the walk began. */
  headRows: number;
  /** The anchor compared against, and whether the chain matched it at its row (null: not reached). */
  anchor: (AuditAnchor & { matched: boolean | null }) | null;
  /** Intact rows past the last anchor: a cut among them could not be proven. */
  unanchoredRows: number;
  /** Rows read by the walk. */
  checkedRows: number;
};

export type VerifyAuditChainOptions = {
  /** The last anchor written outside the database (`readAuditAnchor`); null or absent: none. */
  anchor?: AuditAnchor | null;
  /** Rows per keyset page; default 5000. Memory is about two pages per user id present. */
  pageSize?: number;
};

const StartSchema = z.object({ start_id: z.number().nullable(), start_created_at: z.string().nullable(), legacy_rows: z.number(), start_hash: z.string() });

async function readChainStart(db: DatabasePool) {
  return db.one(sql.type(StartSchema)`
    SELECT start_id, to_char(start_created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS start_created_at,
           legacy_rows, encode(start_hash, 'hex') AS start_hash
    FROM audit_chain`);
}

const describeRow = (row: WalkedRow) => `row id ${row.id} (created_at ${row.createdAt})`;

/** Names the break at `row`, whose place is not the expected one or whose hash does not match; `next` is the row after it. */
function classify(row: WalkedRow, next: WalkedRow | undefined, expected: number, previous: string): ChainBreak {
  const at = { row: expected, id: row.id };
  const chainsHere = (candidate: WalkedRow | undefined) =>
    candidate?.seq === expected && candidate.hash === chainHash(previous, { ...candidate, seq: expected });
  if (row.seq === null || row.hash === null) {
    return { kind: 'inserted', ...at, detail: `${describeRow(row)} carries no chain hash: it was not written by the audit-writer` };
  }
  if (row.seq === expected) {
    if (chainsHere(next)) return { kind: 'inserted', ...at, detail: `${describeRow(row)} claims place ${expected}, which the next row holds` };
    return { kind: 'edited', ...at, detail: `${describeRow(row)} at place ${expected} no longer matches its hash` };
  }
  if (row.seq < expected) {
    return { kind: 'inserted', ...at, detail: `${describeRow(row)} claims place ${row.seq}, already passed` };
  }
  if (next?.seq === expected) {
    return { kind: 'out_of_order', ...at, detail: `${describeRow(row)} (place ${row.seq}) comes before row id ${next.id} (place ${expected})` };
  }
  const missing = row.seq - expected;
  return { kind: 'removed', ...at, detail: `${missing === 1 ? `place ${expected} is` : `places ${expected} to ${row.seq - 1} are`} missing before ${describeRow(row)}` };
}

/**
 * Walks the hash chain over `audit_log` from its recorded start, in bounded memory, and reports the last
 * row proven intact, or the first row edited, removed, inserted or out of order; then compares the
 * chain with the last anchor written outside the database (a cut before it, or a chain rewritten whole,
 * is found; rows after it are reported as not yet anchored). Reads only; never throws on a broken chain.
 */
export async function verifyAuditChain(db: DatabasePool, options: VerifyAuditChainOptions = {}): Promise<AuditChainReport> {
  const anchor = options.anchor ?? null;
  const start = await readChainStart(db);
  const head = await readChainHead(db);
  const after: LedgerPosition | null =
    start.start_id !== null && start.start_created_at !== null ? { createdAt: start.start_created_at, id: start.start_id } : null;

  let previous = start.start_hash;
  let intactThrough: AuditChainReport['intactThrough'] = { row: 0, id: null };
  let found: ChainBreak | null = null;
  let anchorMatched: boolean | null = null;
  let checkedRows = 0;

  const rows = walkLedger(db, after, options.pageSize ?? 5000);
  let current = await rows.next();
  while (!current.done) {
    const row = current.value;
    const following = await rows.next();
    const next = following.done ? undefined : following.value;
    checkedRows += 1;
    const expected = intactThrough.row + 1;
    const hash = row.seq === expected && row.hash !== null ? chainHash(previous, row as WalkedRow & { seq: number }) : null;
    if (hash === null || hash !== row.hash) {
      found = classify(row, next, expected, previous);
      break;
    }
    if (anchor !== null && expected === anchor.rows) {
      anchorMatched = row.hash === anchor.hash && row.id === anchor.id;
      if (!anchorMatched) {
        found = {
          kind: 'rewritten',
          row: expected,
          id: row.id,
          detail: `${describeRow(row)} at place ${expected} differs from the anchor written at ${anchor.writtenAt}: the chain was rewritten`,
        };
        break;
      }
    }
    previous = hash;
    intactThrough = { row: expected, id: row.id };
    current = following;
  }
  await rows.return(undefined);

  if (found === null && anchor !== null && intactThrough.row < anchor.rows) {
    found = {
      kind: 'truncated',
      row: intactThrough.row + 1,
      id: null,
      detail: `the chain ends at place ${intactThrough.row}, but the anchor written at ${anchor.writtenAt} recorded ${anchor.rows} rows`,
    };
  } else if (found === null && intactThrough.row < head.seq) {
    found = {
      kind: 'truncated',
      row: intactThrough.row + 1,
      id: null,
      detail: `the chain ends at place ${intactThrough.row}, but the database's head record says ${head.seq} rows`,
    };
  }
  const anchoredRows = anchor !== null && anchorMatched === true ? anchor.rows : 0;
  return {
    intact: found === null,
    intactThrough,
    break: found,
    rowsBeforeChain: start.legacy_rows,
    headRows: head.seq,
    anchor: anchor === null ? null : { ...anchor, matched: anchorMatched },
    unanchoredRows: found === null ? intactThrough.row - anchoredRows : 0,
    checkedRows,
  };
}
