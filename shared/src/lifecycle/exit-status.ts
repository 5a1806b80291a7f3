/**
 * The exit status of a service that failed on something a restart cannot fix (a port taken, a file it may
 * not read or write, a bad setting). The launcher stops instead of restarting it. 78 is EX_CONFIG of sysexits.
 */
export const EXIT_NEEDS_OPERATOR = 78;

const OPERATOR_CODES: Record<string, string> = {
  EADDRINUSE: 'its port is already in use: stop what uses it or choose another port',
  EADDRNOTAVAIL: 'its address (BIND_HOST) is not one of this machine: fix BIND_HOST',
  EACCES: 'it may not use a file or port: fix the permissions (or DATA_DIR), or choose a port above 1023',
  EPERM: 'it may not use a file: fix the permissions of DATA_DIR, or set DATA_DIR to a folder this user owns',
  EROFS: 'DATA_DIR is on a read-only file system: set DATA_DIR to a writable folder',
  ENOTDIR: 'DATA_DIR is not a folder: set DATA_DIR to a folder',
};

/** What the operator must do about a start failure, or `undefined` when a restart may help. */
export function operatorFix(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? OPERATOR_CODES[code] : undefined;
}
