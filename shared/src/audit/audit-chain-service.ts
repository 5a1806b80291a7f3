import { z } from 'zod';
import type { DatabasePool } from '../db/index.ts';
import { AuditAnchorSchema, AuditAnchorUnreadableError, readAuditAnchor } from './audit-anchor.ts';
import { CHAIN_BREAK_KINDS, verifyAuditChain } from './audit-chain-verify.ts';

/** The verification as `GET /api/audit/verify` and `npm run audit:verify --json` answer it. */
export const AuditLedgerVerificationSchema = z.object({
  intact: z.boolean(),
  intactThrough: z.object({ row: z.number(), id: z.number().nullable() }),
  break: z.object({ kind: z.enum(CHAIN_BREAK_KINDS), row: z.number(), id: z.number().nullable(), detail: z.string() }).nullable(),
  rowsBeforeChain: z.number(),
  headRows: z.number(),
  anchor: AuditAnchorSchema.extend({ matched: z.boolean().nullable() }).nullable(),
  /** `absent`: no anchor was ever written in this DATA_DIR; `unreadable`: the file is damaged (and ignored). */
  anchorFile: z.enum(['present', 'absent', 'unreadable']),
  unanchoredRows: z.number(),
  checkedRows: z.number(),
  verifiedAt: z.string(),
  elapsedMs: z.number(),
});
export type AuditLedgerVerification = z.infer<typeof AuditLedgerVerificationSchema>;

export type VerifyAuditLedgerOptions = {
  /** `DATA_DIR`, where the audit-writer keeps the last anchor. */
  dataDir: string;
  /** Rows per keyset page; default 5000. */
  pageSize?: number;
  /** Default the system clock. */
  now?: () => Date;
};

/**
 * The whole check, for every caller (the Console route, `npm run audit:verify`, the operator CLI): reads
 * the last anchor from `DATA_DIR` and walks the chain against it. A damaged anchor file is reported,
 * never fatal: the chain is still walked.
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
  const report = await verifyAuditChain(db, { anchor, pageSize: options.pageSize });
  return { ...report, anchorFile, verifiedAt: now().toISOString(), elapsedMs: Math.round(performance.now() - started) };
}

/** The verification as lines for a terminal. */
export function formatAuditLedgerVerification(result: AuditLedgerVerification): string {
  const lines: string[] = [];
  const through = result.intactThrough;
  const intactPart = through.row === 0 ? 'no chained row proven intact' : `intact up to row ${through.row} (id ${through.id})`;
  lines.push(result.intact ? `audit chain intact: ${intactPart}` : `audit chain BROKEN: ${intactPart}`);
  if (result.break) lines.push(`  ${result.break.kind} at row ${result.break.row}: ${result.break.detail}`);
  if (result.anchor) {
    const state = result.anchor.matched === true ? 'matched' : result.anchor.matched === false ? 'NOT matched' : 'not reached';
    lines.push(`  last anchor: ${result.anchor.rows} rows, written ${result.anchor.writtenAt} (${state})`);
  } else {
    lines.push(result.anchorFile === 'unreadable' ? '  last anchor: the anchor file is damaged; nothing to compare with' : '  last anchor: none written yet');
  }
  if (result.unanchoredRows > 0) lines.push(`  ${result.unanchoredRows} rows after the last anchor are not yet anchored: a cut among them cannot be proven`);
  if (result.rowsBeforeChain > 0) lines.push(`  ${result.rowsBeforeChain} rows written before the chain began are not covered`);
  lines.push(`  ${result.checkedRows} rows read in ${(result.elapsedMs / 1000).toFixed(1)} s`);
  return lines.join('\n');
}
