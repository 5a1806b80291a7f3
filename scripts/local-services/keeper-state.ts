import { readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { z } from 'zod';

/** What a keeper is asked to run (passed as its one argument, in JSON). */
export const KeeperSpecSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('postgres'), clusterDir: z.string(), port: z.number().int(), stateFile: z.string().optional(), logFile: z.string().optional() }),
  z.object({ kind: z.literal('redis'), port: z.number().int(), dataDir: z.string().optional(), stateFile: z.string().optional(), logFile: z.string().optional() }),
]);
export type KeeperSpec = z.infer<typeof KeeperSpecSchema>;

/** What a running keeper publishes for the other entry points of the same data folder. */
export const KeeperStateSchema = z.object({
  keeperPid: z.number().int(),
  storePid: z.number().int(),
  /** The store's own port. */
  port: z.number().int(),
  /** Where the keeper takes leases. */
  leasePort: z.number().int(),
  url: z.string(),
});
export type KeeperState = z.infer<typeof KeeperStateSchema>;

/** The state file's content, or `undefined` when there is none or it cannot be read as one. */
export function readKeeperState(file: string): KeeperState | undefined {
  try {
    return KeeperStateSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch {
    return undefined;
  }
}

/** Written aside, then renamed, so that a reader never sees half a file. */
export async function writeKeeperState(file: string, state: KeeperState): Promise<void> {
  const aside = `${file}.${process.pid}`;
  await writeFile(aside, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  await rename(aside, file);
}

export async function removeKeeperState(file: string, keeperPid: number): Promise<void> {
  // Only the keeper that wrote it removes it: a newer keeper may have replaced it.
  if (readKeeperState(file)?.keeperPid === keeperPid) await rm(file, { force: true });
}

/** Whether the process runs; a zombie (ended, not yet reaped, as under a PID 1 that never reaps) does not. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return processState(pid) !== 'Z';
}

function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** The command line of a live process, where the system shows it (`/proc`); empty elsewhere. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** The parent of a live process, where the system shows it (`/proc`). */
export function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}
