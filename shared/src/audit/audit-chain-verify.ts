import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import { isOldFormatAnchor, type AuditAnchor } from './audit-anchor.ts';
import { chainHash, keyedChainHash } from './audit-chain-fns.ts';
import { MICROSECOND_UTC, readChainHead } from './audit-chain-queries.ts';
import { walkLedger, type LedgerPosition, type WalkedRow } from './audit-chain-walk.ts';

/**
 * What broke the chain, named from the rows' stored places (chain_seq):
 * - `edited`: the row at its expected place no longer matches its link;
 * - `forged`: the row at its expected place carries a plain SHA-256 link where the chain is keyed: it was
 *   computed by someone without the chain key, not by the audit-writer;
 * - `removed`: the next row found sits further along than the expected place;
 * - `inserted`: a row with no chain hash, or one repeating a place already passed, or an extra row
 *   claiming the expected place, among the chained rows;
 * - `out_of_order`: the row holding the expected place comes after a later one (a swapped pair);
 * - `truncated`: the chain ends before the last anchor's row count (or the head the database records);
 * - `rewritten`: the chain differs from the anchor at the anchor's row, or a row at a place the anchor
 *   covers was written after the anchor;
 * - `another_chain`: the anchor in DATA_DIR belongs to another chain (another database); row 0: it names
 *   no row, and the chain was walked without it.
 */
export const CHAIN_BREAK_KINDS = ['edited', 'forged', 'removed', 'inserted', 'out_of_order', 'truncated', 'rewritten', 'another_chain'] as const;
export type ChainBreakKind = (typeof CHAIN_BREAK_KINDS)[number];

export type ChainBreak = {
  kind: ChainBreakKind;
  /** The chain place where the break was found (the first place not proven intact); 0 for `another_chain`. */
  row: number;
  /** The id of the offending row, when there is one. */
  id: number | null;
  detail: string;
};

/** Whose chain the anchor is: this one, another one, or unknown (an anchor of the old format). */
export type AnchorChain = 'this' | 'another' | 'old_format';

export type AuditChainReport = {
  intact: boolean;
  /** The last row proven intact: its place in the chain (0: none) and id. */
  intactThrough: { row: number; id: number | null };
  break: ChainBreak | null;
  /** Rows written before the chain began, as the migration counted them; not covered by it. */
  rowsBeforeChain: number;
  /** Rows of the chain as the database's head record says, read when the walk began. */
  headRows: number;
  /** The chain's random id, as the database's head record holds it. */
  chainId: string;
  /** The id of the chain key the links were checked with; null: no key, internal consistency only. */
  keyId: string | null;
  /** The place of the first row linked with the chain key (null: none found); rows before it are of the old, unkeyed chain. */
  firstKeyedRow: number | null;
  /** Keyed rows whose content could not be checked, for want of the key (their places and order were). */
  uncheckedRows: number;
  /** The anchor compared against, and whether the chain matched it at its row (null: not reached). */
  anchor: (AuditAnchor & { matched: boolean | null; chain: AnchorChain }) | null;
  /** Whether the database's system identifier differs from the anchor's: information only (a logical restore changes it); null: unknown. */
  databaseSystemIdChanged: boolean | null;
  /** Intact rows past the last anchor: a cut among them could not be proven. */
  unanchoredRows: number;
  /** Rows read by the walk. */
  checkedRows: number;
};

export type VerifyAuditChainOptions = {
  /** The last anchor written outside the database (`readAuditAnchor`); null or absent: none. */
  anchor?: AuditAnchor | null;
  /** The chain key (`readAuditChainKey`); null or absent: keyed rows are checked for internal consistency only. */
  key?: { bytes: Buffer; id: string } | null;
  /** Rows per keyset page; default 5000. Memory is about two pages per user id present. */
  pageSize?: number;
};

const StartSchema = z.object({
  start_id: z.number().nullable(),
  start_created_at: z.string().nullable(),
  legacy_rows: z.number(),
  start_hash: z.string(),
  first_keyed_seq: z.number().nullable(),
});

async function readChainStart(db: DatabasePool) {
  return db.one(sql.type(StartSchema)`
    SELECT start_id, to_char(start_created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS start_created_at,
           legacy_rows, encode(start_hash, 'hex') AS start_hash, first_keyed_seq
    FROM audit_chain`);
}

/** The database cluster's system identifier, or null where the role may not read it. A logical restore changes it. */
export async function readDatabaseSystemId(db: Pick<DatabasePool, 'maybeOneFirst'>): Promise<string | null> {
  try {
    return await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`SELECT system_identifier::text AS id FROM pg_control_system()`);
  } catch {
    return null;
  }
}

const describeRow = (row: WalkedRow) => `row id ${row.id} (created_at ${row.createdAt})`;

const after = (row: WalkedRow, position: LedgerPosition) =>
  row.createdAt > position.createdAt || (row.createdAt === position.createdAt && row.id > position.id);

/** Names the break at `row`, whose place is not the expected one or whose link does not match; `next` is the row after it. */
function classify(row: WalkedRow, next: WalkedRow | undefined, expected: number, links: (row: WalkedRow) => boolean, keyNote: string): ChainBreak {
  const at = { row: expected, id: row.id };
  const chainsHere = (candidate: WalkedRow | undefined) => candidate?.seq === expected && links(candidate);
  if (row.hash === null) {
    return { kind: 'inserted', ...at, detail: `${describeRow(row)} carries no chain hash: it was not written by the audit-writer` };
  }
  if (row.seq === null) {
    return { kind: 'inserted', ...at, detail: `${describeRow(row)} carries a chain hash but no place in the chain: its place was cleared after it was written` };
  }
  if (row.seq === expected) {
    if (chainsHere(next)) return { kind: 'inserted', ...at, detail: `${describeRow(row)} claims place ${expected}, which the next row holds` };
    return { kind: 'edited', ...at, detail: `${describeRow(row)} at place ${expected} no longer matches its link${keyNote}` };
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
 * Whose chain the anchor is. Its chain id decides; but a database whose head record was given another id
 * still holds its first row, so an anchor naming this chain's first row is this chain's (a changed id
 * cannot turn a cut chain into "another chain"). An anchor without a chain id is of the old format.
 */
function anchorChainOf(anchor: AuditAnchor, head: { chainId: string; firstHash: string | null }): AnchorChain {
  if (isOldFormatAnchor(anchor)) return 'old_format';
  if (anchor.chainId === head.chainId) return 'this';
  if (anchor.firstHash != null && anchor.firstHash === head.firstHash) return 'this';
  return 'another';
}

/**
 * Walks the hash chain over `audit_log` from its recorded start, in bounded memory, and reports the last
 * row proven intact, or the first row edited, forged, removed, inserted or out of order; then compares
 * the chain with the last anchor written outside the database (a cut before it, or a chain rewritten, is
 * found; rows after it are reported as not yet anchored). Rows of the old, unkeyed chain are checked as
 * they were written, up to the first keyed row; from there every row must carry the chain key's link
 * (a plain SHA-256 there is `forged`). Without the key, keyed rows are checked for internal consistency
 * only (places, order, the head and the anchor), not their content. Reads only; never throws on a
 * broken chain.
 */
export async function verifyAuditChain(db: DatabasePool, options: VerifyAuditChainOptions = {}): Promise<AuditChainReport> {
  const given = options.anchor ?? null;
  const key = options.key ?? null;
  const start = await readChainStart(db);
  const head = await readChainHead(db);
  const systemId = given?.databaseSystemId != null ? await readDatabaseSystemId(db) : null;
  const anchorChain = given === null ? null : anchorChainOf(given, head);
  // An anchor of another chain says nothing about this one: the chain is walked without it.
  const anchor = anchorChain === 'another' ? null : given;
  const from: LedgerPosition | null =
    start.start_id !== null && start.start_created_at !== null ? { createdAt: start.start_created_at, id: start.start_id } : null;
  const anchoredAt: LedgerPosition | null = anchor?.createdAt != null && anchor.id !== null ? { createdAt: anchor.createdAt, id: anchor.id } : null;
  /**
   * The place from which every row must be keyed: as the anchor records it (no keyed row up to it: none
   * before its end), else as the head record does. Without the key, a row before it that does not match
   * its unkeyed link is an edit; from it on, a row's content cannot be checked.
   */
  const keyedFrom = anchor?.firstKeyedRow !== undefined ? (anchor.firstKeyedRow ?? anchor.rows + 1) : start.first_keyed_seq;
  const keyNote =
    key === null
      ? ''
      : anchor?.keyId != null && anchor.keyId !== key.id
        ? ` under chain key ${key.id} (the anchor was written under key ${anchor.keyId}: this DATA_DIR's key is not the chain's)`
        : ` under chain key ${key.id}`;

  let previous = start.start_hash;
  let intactThrough: AuditChainReport['intactThrough'] = { row: 0, id: null };
  let found: ChainBreak | null = null;
  let anchorMatched: boolean | null = null;
  let firstKeyedRow: number | null = null;
  let uncheckedRows = 0;
  let checkedRows = 0;

  /** How the stored link of `row` at the expected place stands: 'keyed', 'unkeyed', 'unchecked' (no key) or 'bad'. */
  const linkOf = (row: WalkedRow & { seq: number; hash: string }, prior: string): 'keyed' | 'unkeyed' | 'unchecked' | 'bad' => {
    if (key !== null && keyedChainHash(key.bytes, prior, row) === row.hash) return 'keyed';
    if (chainHash(prior, row) === row.hash) return 'unkeyed';
    return key === null ? 'unchecked' : 'bad';
  };
  const mustBeKeyed = (place: number) => firstKeyedRow !== null || (keyedFrom !== null && place >= keyedFrom);

  const rows = walkLedger(db, from, options.pageSize ?? 5000);
  let current = await rows.next();
  while (!current.done) {
    const row = current.value;
    const following = await rows.next();
    const next = following.done ? undefined : following.value;
    checkedRows += 1;
    const expected = intactThrough.row + 1;
    if (anchoredAt !== null && anchor !== null && expected <= anchor.rows && row.seq !== null && after(row, anchoredAt)) {
      found = {
        kind: 'rewritten',
        row: expected,
        id: row.id,
        detail: `${describeRow(row)} at place ${row.seq} was written after the anchor of ${anchor.writtenAt}, which covers places up to ${anchor.rows}: the rows anchored there were replaced`,
      };
      break;
    }
    const placed = row.seq === expected && row.hash !== null ? (row as WalkedRow & { seq: number; hash: string }) : null;
    const link = placed === null ? 'bad' : linkOf(placed, previous);
    if (link === 'unkeyed' && mustBeKeyed(expected)) {
      found = {
        kind: 'forged',
        row: expected,
        id: row.id,
        detail: `${describeRow(row)} at place ${expected} is linked with a plain SHA-256 where the chain is keyed: it was not written by the audit-writer`,
      };
      break;
    }
    if (link === 'unchecked' && (keyedFrom === null || expected < keyedFrom)) {
      found = { kind: 'edited', row: expected, id: row.id, detail: `${describeRow(row)} at place ${expected} no longer matches its link` };
      break;
    }
    if (link === 'bad') {
      const links = (candidate: WalkedRow) => candidate.hash !== null && candidate.seq !== null && linkOf(candidate as WalkedRow & { seq: number; hash: string }, previous) !== 'bad';
      found = classify(row, next, expected, links, keyNote);
      break;
    }
    if (link === 'keyed' || link === 'unchecked') firstKeyedRow ??= expected;
    if (link === 'unchecked') uncheckedRows += 1;
    if (expected === 1 && head.firstHash !== null && row.hash !== head.firstHash) {
      found = { kind: 'rewritten', row: 1, id: row.id, detail: `${describeRow(row)} is not the first row the chain's head record names` };
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
    previous = row.hash as string;
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
  if (found === null && given !== null && anchorChain === 'another') {
    found = {
      kind: 'another_chain',
      row: 0,
      id: null,
      detail: `this anchor belongs to another chain (chain ${given.chainId}, written at ${given.writtenAt}); this database's chain is ${head.chainId}. Nothing after the head record's rows could be proven against an anchor`,
    };
  }
  const anchoredRows = anchor !== null && anchorMatched === true ? anchor.rows : 0;
  return {
    intact: found === null,
    intactThrough,
    break: found,
    rowsBeforeChain: start.legacy_rows,
    headRows: head.seq,
    chainId: head.chainId,
    keyId: key?.id ?? null,
    firstKeyedRow,
    uncheckedRows,
    anchor: given === null || anchorChain === null ? null : { ...given, matched: anchorChain === 'another' ? null : anchorMatched, chain: anchorChain },
    databaseSystemIdChanged: systemId === null || given?.databaseSystemId == null ? null : systemId !== given.databaseSystemId,
    unanchoredRows: found === null ? intactThrough.row - anchoredRows : 0,
    checkedRows,
  };
}
