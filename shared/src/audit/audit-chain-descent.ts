import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import { chainHash, keyedChainHash } from './audit-chain-fns.ts';
import { MICROSECOND_UTC, type ChainHead } from './audit-chain-queries.ts';
import { walkLedger, type LedgerPosition } from './audit-chain-walk.ts';

/** Where a descent check starts: the last anchored head (place, id, hash, created_at), or the chain's start. */
export type DescentBase = { rows: number; id: number | null; hash: string; createdAt: string | null; firstKeyedRow: number | null };

export type Descent = { descends: true; firstKeyedRow: number | null } | { descends: false; detail: string };

const StartSchema = z.object({ start_id: z.number().nullable(), start_created_at: z.string().nullable(), start_hash: z.string() });

/** The chain's recorded start as a descent base: place 0, the seed hash, after the rows written before the chain. */
export async function readChainStartBase(db: DatabasePool): Promise<DescentBase> {
  const start = await db.one(sql.type(StartSchema)`
    SELECT start_id, to_char(start_created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS start_created_at, encode(start_hash, 'hex') AS start_hash
    FROM audit_chain`);
  return { rows: 0, id: start.start_id, hash: start.start_hash, createdAt: start.start_created_at, firstKeyedRow: null };
}

/**
 * Whether `head` descends from `base`: the rows at the places between them follow each other in the
 * ledger's order, each linked to the one before under the chain key, and end at exactly the head's hash.
 * Rows of the old, unkeyed chain are accepted only up to the first keyed row (so only across the change).
 * Reads the rows after `base` only: those written since the last anchor.
 */
export async function checkDescent(db: DatabasePool, key: Buffer, base: DescentBase, head: ChainHead, pageSize = 5000): Promise<Descent> {
  if (head.seq < base.rows) return { descends: false, detail: `the head is at place ${head.seq}, before the last anchored place ${base.rows}: the chain was cut back` };
  if (head.seq === base.rows) {
    return head.hash === base.hash ? { descends: true, firstKeyedRow: base.firstKeyedRow } : { descends: false, detail: `place ${head.seq} holds another row than the one last anchored` };
  }
  const from: LedgerPosition | null = base.createdAt !== null && base.id !== null ? { createdAt: base.createdAt, id: base.id } : null;
  let previous = base.hash;
  let place = base.rows;
  let firstKeyedRow = base.firstKeyedRow;
  // Leaving the loop early (a return, a throw) closes the walk: for await calls its return().
  for await (const row of walkLedger(db, from, pageSize)) {
    const expected = place + 1;
    if (row.seq !== expected || row.hash === null) {
      return { descends: false, detail: `row id ${row.id} stands where place ${expected} should (it claims place ${row.seq ?? 'none'})` };
    }
    const content = { ...row, seq: expected };
    if (keyedChainHash(key, previous, content) === row.hash) firstKeyedRow ??= expected;
    else if (firstKeyedRow !== null || chainHash(previous, content) !== row.hash) {
      return { descends: false, detail: `row id ${row.id} at place ${expected} does not carry the chain key's link` };
    }
    previous = row.hash;
    place = expected;
    if (place === head.seq) {
      return row.hash === head.hash && row.id === head.id
        ? { descends: true, firstKeyedRow }
        : { descends: false, detail: `place ${place} holds row id ${row.id}, not the head's` };
    }
  }
  return { descends: false, detail: `the rows end at place ${place}, before the head's place ${head.seq}` };
}
