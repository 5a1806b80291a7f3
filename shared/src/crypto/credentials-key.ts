import { chmod, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../logger/index.ts';
import { CREDENTIALS_KEY_BYTES } from './credentials-cipher.ts';
import { createKeyFileOnce } from './key-file.ts';

const KEY_FILE = 'credentials.key';

const base64Key = z
  .string()
  .refine((value) => /^[A-Za-z0-9+/]+={0,2}$/.test(value) && Buffer.from(value, 'base64').length === CREDENTIALS_KEY_BYTES, {
    error: `must be ${CREDENTIALS_KEY_BYTES} bytes in base64 (openssl rand -base64 32)`,
  });

/** The configuration fragment of every process that seals or opens source credentials. */
export const credentialsConfig = z.object({
  /** AES-256-GCM key, base64 of 32 bytes. Unset: generated into `DATA_DIR/credentials.key` (mode 0600) on first start. */
  CREDENTIALS_KEY: base64Key.optional(),
  /** Where the generated key is kept; default ./data. */
  DATA_DIR: z.string().min(1).default('data'),
});
export type CredentialsSettings = z.output<typeof credentialsConfig>;

function decodeKey(text: string, where: string): Buffer {
  const parsed = base64Key.safeParse(text.trim());
  if (!parsed.success) throw new Error(`${where} does not hold a ${CREDENTIALS_KEY_BYTES}-byte base64 key`);
  return Buffer.from(parsed.data, 'base64');
}

/**
 * The credentials key: `CREDENTIALS_KEY` when set, else the key file in the data directory, created on
 * first start. Two processes starting at once agree on one key: the file appears atomically (written
 * aside, then hard-linked into place), and whoever loses the race reads the winner's.
 */
export async function loadCredentialsKey(settings: CredentialsSettings, log?: Logger): Promise<Buffer> {
  if (settings.CREDENTIALS_KEY) return decodeKey(settings.CREDENTIALS_KEY, 'CREDENTIALS_KEY');
  const dir = path.resolve(settings.DATA_DIR);
  const file = path.join(dir, KEY_FILE);
  const existing = await readKeyFile(file, log);
  if (existing) return existing;

  if (await createKeyFileOnce(file, CREDENTIALS_KEY_BYTES)) log?.info({ file }, 'generated a new credentials key; back it up with the database');
  const created = await readKeyFile(file, log);
  if (!created) throw new Error(`could not create ${file}`);
  return created;
}

async function readKeyFile(file: string, log?: Logger): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const mode = (await stat(file)).mode & 0o777;
  if (mode & 0o077) {
    log?.warn({ file, mode: mode.toString(8) }, 'credentials key file was readable by others; restricting it to 0600');
    await chmod(file, 0o600);
  }
  return decodeKey(text, file);
}
