import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LaunchError } from './launch-error.ts';

/** Fails with the fix when the data folder cannot be created or written (checked before anything starts). */
export async function ensureWritableDataDir(dataDir: string): Promise<void> {
  const probe = path.join(dataDir, `.write-check-${process.pid}-${randomBytes(3).toString('hex')}`);
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await writeFile(probe, '', { mode: 0o600 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new LaunchError(
      `DATA_DIR ${dataDir} is not writable (${code}): set DATA_DIR to a folder this user can write ` +
        '(for example DATA_DIR=$HOME/.local/share/pcg), or fix the permissions of that folder',
    );
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
}
