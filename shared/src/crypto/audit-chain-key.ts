import { createHash } from 'node:crypto';
import { chmod, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger/index.ts';
import { createKeyFileOnce } from './key-file.ts';

/** The file in `DATA_DIR` holding the key each audit chain link is keyed with (design 8.4). */
export const AUDIT_CHAIN_KEY_FILE = 'audit-chain.key';

const KEY_BYTES = 32;

/**
 * The audit chain's key: 32 random bytes, kept only in `DATA_DIR` (never in the database, never logged).
 * `id` names it without revealing it (the start of a SHA-256 of a label and the key), so verify can say
 * which key it used and an anchor which key wrote it.
 */
export type AuditChainKey = { bytes: Buffer; id: string; file: string };

export class AuditChainKeyUnreadableError extends Error {
  override name = 'AuditChainKeyUnreadableError';
}

export const auditChainKeyPath = (dataDir: string) => path.join(path.resolve(dataDir), AUDIT_CHAIN_KEY_FILE);

export const auditChainKeyId = (bytes: Buffer): string =>
  createHash('sha256').update('pcg-audit-chain-key-id\n').update(bytes).digest('hex').slice(0, 16);

function decode(text: string, file: string): AuditChainKey {
  const value = text.trim();
  const bytes = Buffer.from(value, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || bytes.length !== KEY_BYTES) {
    throw new AuditChainKeyUnreadableError(`${file} does not hold a ${KEY_BYTES}-byte base64 key`);
  }
  return { bytes, id: auditChainKeyId(bytes), file };
}

/**
 * The chain key if `DATA_DIR` holds one, else null; never creates it (verify reads, only the writer
 * creates). Throws `AuditChainKeyUnreadableError` for a damaged file. A file readable by others is
 * restricted to 0600, as the credentials key is.
 */
export async function readAuditChainKey(dataDir: string, log?: Logger): Promise<AuditChainKey | null> {
  const file = auditChainKeyPath(dataDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const mode = (await stat(file)).mode & 0o777;
  if (mode & 0o077) {
    log?.warn({ file, mode: mode.toString(8) }, 'audit chain key file was readable by others; restricting it to 0600');
    await chmod(file, 0o600);
  }
  return decode(text, file);
}

/**
 * The chain key, created on first start like the credentials key: written aside (mode 0600), then
 * hard-linked into place, so two processes starting at once agree on one key.
 */
export async function loadAuditChainKey(dataDir: string, log?: Logger): Promise<AuditChainKey> {
  const existing = await readAuditChainKey(dataDir, log);
  if (existing) return existing;
  const file = auditChainKeyPath(dataDir);
  if (await createKeyFileOnce(file, KEY_BYTES)) log?.info({ file }, 'generated a new audit chain key; back it up with the credentials key and the database');
  const created = await readAuditChainKey(dataDir, log);
  if (!created) throw new Error(`could not create ${file}`);
  return created;
}
