/**
 * `npm run audit:verify [-- --json]`: walks the audit record's hash chain with the chain key and against
 * the last anchor, both in DATA_DIR, and prints where it is intact, or the first row edited, forged,
 * removed, inserted or out of order; which key and anchor it used and what it proved (without the key:
 * internal consistency only). Exit status: 0 intact, 2 broken (1 is left to failures to run at all).
 */
import path from 'node:path';
import { formatAuditLedgerVerification, verifyAuditLedger, type AuditLedgerVerification } from '@pcg/shared/audit';
import { openDatabase } from '@pcg/shared/db';
import { withResolvedDatabase } from './local-services/index.ts';

const root = path.resolve(import.meta.dirname, '..');

export const AUDIT_VERIFY_EXIT = { intact: 0, broken: 2 } as const;

export type AuditVerifyCommandOptions = {
  /** Print the verification as JSON (the shape `GET /api/audit/verify` answers) instead of lines. */
  json?: boolean;
  /** Where output goes; default stdout. */
  write?: (text: string) => void;
};

/**
 * The command behind `npm run audit:verify`, for any command-line front end to call: finds the database
 * the way `npm start` does, verifies, prints, and resolves to the exit status.
 */
export async function runAuditVerify(options: AuditVerifyCommandOptions = {}): Promise<number> {
  const write = options.write ?? ((text: string) => process.stdout.write(`${text}\n`));
  const result: AuditLedgerVerification = await withResolvedDatabase(async (databaseUrl) => {
    // DATA_DIR is read after withResolvedDatabase has loaded .env, as the launcher reads it.
    const dataDir = path.resolve(root, process.env.DATA_DIR || 'data');
    const database = await openDatabase(databaseUrl, { maximumPoolSize: 3 });
    try {
      return await verifyAuditLedger(database.pool, { dataDir });
    } finally {
      await database.end();
    }
  });
  write(options.json ? JSON.stringify(result, null, 2) : formatAuditLedgerVerification(result));
  return result.intact ? AUDIT_VERIFY_EXIT.intact : AUDIT_VERIFY_EXIT.broken;
}

if (import.meta.main) process.exitCode = await runAuditVerify({ json: process.argv.slice(2).includes('--json') });
