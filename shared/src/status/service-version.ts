import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The release this process runs: the repository's package.json version, as `npm start` and the image carry it. */
export const SERVICE_VERSION: string = (() => {
  try {
    const parsed = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as { version?: unknown };
    return typeof parsed.version === 'string' ? parsed.version : 'unknown';
  } catch {
    return 'unknown';
  }
})();

/** When this process started (epoch ms), for the Status screen's uptime. */
export const PROCESS_STARTED_AT = Math.round(Date.now() - process.uptime() * 1000);
