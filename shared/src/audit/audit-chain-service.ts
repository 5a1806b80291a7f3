import { z } from 'zod';
import { AuditChainKeyUnreadableError, auditChainKeyPath, readAuditChainKey, type AuditChainKey } from '../crypto/audit-chain-key.ts';
import type { DatabasePool } from '../db/index.ts';
import { AuditAnchorSchema, AuditAnchorUnreadableError, auditAnchorPath, readAuditAnchor } from './audit-anchor.ts';
import { CHAIN_BREAK_KINDS, verifyAuditChain, type AuditChainReport } from './audit-chain-verify.ts';

/** The verification as `GET /api/audit/verify` and `npm run audit:verify --json` answer it. Never the key itself. */
export const AuditLedgerVerificationSchema = z.object({
  intact: z.boolean(),
  intactThrough: z.object({ row: z.number(), id: z.number().nullable() }),
  break: z.object({ kind: z.enum(CHAIN_BREAK_KINDS), row: z.number(), id: z.number().nullable(), detail: z.string() }).nullable(),
  rowsBeforeChain: z.number(),
  headRows: z.number(),
  chainId: z.string(),
  /** The chain key used: `present` (its id, never the key), `absent` (no key in DATA_DIR) or `unreadable` (a damaged file, ignored). */
  key: z.object({ state: z.enum(['present', 'absent', 'unreadable']), id: z.string().nullable(), file: z.string() }),
  firstKeyedRow: z.number().nullable(),
  uncheckedRows: z.number(),
  /** The anchor used; the first row's hash it holds is not served (rows' hashes stay unserved). */
  anchor: AuditAnchorSchema.omit({ firstHash: true }).extend({ matched: z.boolean().nullable(), chain: z.enum(['this', 'another', 'old_format']) }).nullable(),
  /** `absent`: no anchor was ever written in this DATA_DIR; `unreadable`: the file is damaged (and ignored). */
  anchorFile: z.enum(['present', 'absent', 'unreadable']),
  anchorPath: z.string(),
  databaseSystemIdChanged: z.boolean().nullable(),
  /** What the walk proved, in words: with the key, or internal consistency only. */
  proven: z.string(),
  unanchoredRows: z.number(),
  checkedRows: z.number(),
  verifiedAt: z.string(),
  elapsedMs: z.number(),
});
export type AuditLedgerVerification = z.infer<typeof AuditLedgerVerificationSchema>;

export type VerifyAuditLedgerOptions = {
  /** `DATA_DIR`, where the audit-writer keeps the chain key and the last anchor. */
  dataDir: string;
  /** Rows per keyset page; default 5000. */
  pageSize?: number;
  /** Default the system clock. */
  now?: () => Date;
};

/** What a walk proved, in one sentence an operator can act on. */
export function provenBy(
  report: Pick<AuditChainReport, 'keyId' | 'firstKeyedRow' | 'uncheckedRows' | 'intactThrough' | 'anchor'>,
  keyState: 'present' | 'absent' | 'unreadable',
): string {
  if (report.keyId !== null) {
    const old = report.firstKeyedRow === null ? 'every row is of the old, unkeyed chain' : report.firstKeyedRow > 1 ? `rows before ${report.firstKeyedRow} are of the old, unkeyed chain` : null;
    const reach =
      report.anchor?.matched === true
        ? `every edit, insertion, deletion, reorder and forged append up to the anchor's row ${report.anchor.rows}; rows after it are covered from the next anchor on`
        : 'every edit, insertion, reorder and forged append among the rows read; with no anchor of this chain reached, a cut of the newest rows with the head record rewound cannot be proven';
    return `with chain key ${report.keyId}: ${reach}${old ? `; ${old} (checked as written, without the key)` : ''}`;
  }
  const why = keyState === 'unreadable' ? 'the chain key file is damaged' : 'there is no chain key in DATA_DIR';
  return `internal consistency only (${why}): places, order, the head record and the anchor were checked${report.uncheckedRows > 0 ? `; the content of ${report.uncheckedRows} keyed rows could not be` : ''}`;
}

/**
 * The whole check, for every caller (the Console route, `npm run audit:verify`, the operator CLI): reads
 * the chain key and the last anchor from `DATA_DIR` and walks the chain against them. A damaged anchor
 * or key file is reported, never fatal: the chain is still walked (without the key: internal
 * consistency only).
 */
export async function verifyAuditLedger(db: DatabasePool, options: VerifyAuditLedgerOptions): Promise<AuditLedgerVerification> {
  const now = options.now ?? (() => new Date());
  const started = performance.now();
  let anchorFile: AuditLedgerVerification['anchorFile'] = 'absent';
  let anchor = null;
  try {
    anchor = await readAuditAnchor(options.dataDir);
    if (anchor !== null) anchorFile = 'present';
  } catch (error) {
    if (!(error instanceof AuditAnchorUnreadableError)) throw error;
    anchorFile = 'unreadable';
  }
  let key: AuditChainKey | null = null;
  let keyState: AuditLedgerVerification['key']['state'] = 'absent';
  try {
    key = await readAuditChainKey(options.dataDir);
    if (key !== null) keyState = 'present';
  } catch (error) {
    if (!(error instanceof AuditChainKeyUnreadableError)) throw error;
    keyState = 'unreadable';
  }
  const report = await verifyAuditChain(db, { anchor, key, pageSize: options.pageSize });
  const served = report.anchor === null ? null : (({ firstHash: _unserved, ...rest }) => rest)(report.anchor);
  return {
    ...report,
    anchor: served,
    key: { state: keyState, id: key?.id ?? null, file: auditChainKeyPath(options.dataDir) },
    anchorFile,
    anchorPath: auditAnchorPath(options.dataDir),
    proven: provenBy(report, keyState),
    verifiedAt: now().toISOString(),
    elapsedMs: Math.round(performance.now() - started),
  };
}

/** The verification as lines for a terminal. */
export function formatAuditLedgerVerification(result: AuditLedgerVerification): string {
  const lines: string[] = [];
  const through = result.intactThrough;
  const intactPart = through.row === 0 ? 'no chained row proven intact' : `intact up to row ${through.row} (id ${through.id})`;
  lines.push(result.intact ? `audit chain intact: ${intactPart}` : `audit chain BROKEN: ${intactPart}`);
  if (result.break) lines.push(`  ${result.break.kind}${result.break.row > 0 ? ` at row ${result.break.row}` : ''}: ${result.break.detail}`);
  lines.push(`  proven: ${result.proven}`);
  const key = result.key;
  lines.push(
    key.state === 'present'
      ? `  chain key: ${key.id} (${key.file})`
      : key.state === 'unreadable'
        ? `  chain key: ${key.file} is damaged; internal consistency only`
        : `  chain key: none at ${key.file}; internal consistency only`,
  );
  if (result.firstKeyedRow !== null) lines.push(`  first keyed row: ${result.firstKeyedRow}`);
  if (result.anchor) {
    const anchor = result.anchor;
    const state = anchor.matched === true ? 'matched' : anchor.matched === false ? 'NOT matched' : 'not reached';
    const whose = anchor.chain === 'another' ? ', this anchor belongs to another chain' : anchor.chain === 'old_format' ? ', of the old format: accepted once, replaced at the next anchor' : '';
    lines.push(`  last anchor: ${anchor.rows} rows, written ${anchor.writtenAt} (${state}${whose}) from ${result.anchorPath}`);
  } else {
    lines.push(result.anchorFile === 'unreadable' ? `  last anchor: ${result.anchorPath} is damaged; nothing to compare with` : '  last anchor: none written yet');
  }
  if (result.databaseSystemIdChanged === true) lines.push('  (information) the database system identifier differs from the anchor\'s: a logical restore changes it');
  if (result.unanchoredRows > 0) lines.push(`  ${result.unanchoredRows} rows after the last anchor are not yet anchored: a cut among them cannot be proven`);
  if (result.rowsBeforeChain > 0) lines.push(`  ${result.rowsBeforeChain} rows written before the chain began are not covered`);
  lines.push(`  ${result.checkedRows} rows read in ${(result.elapsedMs / 1000).toFixed(1)} s`);
  return lines.join('\n');
}
