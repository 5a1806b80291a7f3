import { randomBytes } from 'node:crypto';
import { link, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Creates `file` holding `bytes` random bytes in base64 (mode 0600, its folder 0700) unless it exists.
 * The file appears atomically, written aside and then hard-linked into place, so two processes starting
 * at once agree on one key: whoever loses the race keeps the winner's. True when this call created it.
 */
export async function createKeyFileOnce(file: string, bytes: number): Promise<boolean> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const aside = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}`);
  await writeFile(aside, `${randomBytes(bytes).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(aside, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    await rm(aside, { force: true });
  }
}
