import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

/**
 * What every benchmark shares: the smoke size (`BENCH_SMOKE=1`: a few hundred calls, seconds, for CI)
 * and its child processes, which are stopped whatever way the run ends, so a failed run never leaves a
 * gateway or a peer behind and never hangs.
 */
export const SMOKE = process.env.BENCH_SMOKE === '1';

/** `full` normally, `smoke` in the smoke size; an explicit environment variable wins over both. */
export function sized(variable: string, full: number, smoke: number): number {
  const value = process.env[variable];
  if (value !== undefined && value !== '') {
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed) || parsed < 0) throw new Error(`${variable} must be a whole number`);
    return parsed;
  }
  return SMOKE ? smoke : full;
}

const children = new Set<ChildProcess>();
// The last resort: a child still running when this process exits for any reason is killed.
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
// Ctrl-C or a CI timeout: exit through the hook above instead of leaving the children running.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

export type StartOptions = { env?: Record<string, string>; nodeArgs?: string[]; ipc?: boolean; readyMs?: number };

/** Starts `node <entry>` and resolves once a stdout line contains `readyText`; rejects if it exits first. */
export async function startChild(entry: string, readyText: string, options: StartOptions = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), entry], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'inherit', ...(options.ipc ? (['ipc'] as const) : [])],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${entry} not ready within ${options.readyMs ?? 60_000} ms`)), options.readyMs ?? 60_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited with ${code ?? signal}`));
    });
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.includes(readyText)) return;
      clearTimeout(timer);
      resolve();
    });
  });
  return child;
}

/** SIGTERM to every child, then SIGKILL to any still running after `graceMs`; resolves when all are gone. */
export async function stopChildren(graceMs = 10_000): Promise<void> {
  const running = [...children];
  await Promise.all(
    running.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

/**
 * Runs a benchmark's body, then its cleanup (children first), whatever happened. A failure is printed
 * and the process exits 1; success exits 0 once cleanup is done (nothing left open can keep it alive).
 */
export async function runBench(name: string, body: () => Promise<void>, cleanup: () => Promise<void> = async () => {}): Promise<never> {
  let failed = false;
  try {
    await body();
  } catch (error) {
    failed = true;
    console.error(`bench:${name} failed:`, error);
  }
  try {
    await stopChildren();
    await cleanup();
  } catch (error) {
    failed = true;
    console.error(`bench:${name} cleanup failed:`, error);
  }
  if (!failed) console.log(`\nbench:${name} finished`);
  process.exit(failed ? 1 : 0);
}
