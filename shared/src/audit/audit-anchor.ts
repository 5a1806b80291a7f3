import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

const HEX_HASH = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * The chain's head as the audit-writer last recorded it outside the database: its row count (the head's
 * place in the chain), id and hash. A database rewritten whole, or cut short, no longer agrees with it.
 * Since issue 36 an anchor also knows its chain (the chain's random id and first row's hash), the chain
 * key it was written under (its id, never the key), the first keyed row, and the database's system
 * identifier. An anchor without `chainId` is of the old format: accepted once, and replaced by the
 * writer's next anchor.
 */
export const AuditAnchorSchema = z.object({
  rows: z.number().int().nonnegative(),
  id: z.number().int().nullable(),
  hash: HEX_HASH,
  createdAt: z.string().nullable(),
  writtenAt: z.string(),
  chainId: z.string().optional(),
  firstHash: HEX_HASH.nullable().optional(),
  keyId: z.string().nullable().optional(),
  /** The place of the chain's first keyed row, or null when no row up to the anchor is keyed. */
  firstKeyedRow: z.number().int().positive().nullable().optional(),
  databaseSystemId: z.string().nullable().optional(),
});
export type AuditAnchor = z.infer<typeof AuditAnchorSchema>;

/** The file in `DATA_DIR` holding the last anchor. */
export const AUDIT_ANCHOR_FILE = 'audit-anchor.json';

/** The log line each anchor is written with, so the log stream keeps every anchor, not just the last. */
export const AUDIT_ANCHOR_LOG_LINE = '[audit] chain anchor';

/** Whether an anchor is of the format written before anchors knew their chain. */
export const isOldFormatAnchor = (anchor: AuditAnchor): boolean => anchor.chainId === undefined;

export class AuditAnchorUnreadableError extends Error {
  override name = 'AuditAnchorUnreadableError';
}

export const auditAnchorPath = (dataDir: string) => path.join(path.resolve(dataDir), AUDIT_ANCHOR_FILE);

/**
 * Replaces the anchor file atomically (a new file of mode 0600, flushed to disk, then renamed over the
 * old one), so a crash leaves the previous anchor or the new one, never half of one.
 */
export async function writeAuditAnchor(dataDir: string, anchor: AuditAnchor): Promise<void> {
  const target = auditAnchorPath(dataDir);
  await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  const temporary = `${target}.${randomBytes(4).toString('hex')}.tmp`;
  const file = await open(temporary, 'wx', 0o600);
  try {
    await file.writeFile(`${JSON.stringify(AuditAnchorSchema.parse(anchor))}\n`);
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** The last anchor, or null when none was ever written. Throws `AuditAnchorUnreadableError` for a damaged file. */
export async function readAuditAnchor(dataDir: string): Promise<AuditAnchor | null> {
  let text: string;
  try {
    text = await readFile(auditAnchorPath(dataDir), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    return AuditAnchorSchema.parse(JSON.parse(text));
  } catch {
    throw new AuditAnchorUnreadableError(`${auditAnchorPath(dataDir)} does not hold an audit chain anchor`);
  }
}
