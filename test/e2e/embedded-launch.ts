import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { waitFor } from '@pcg/testkit/testing';
import { freePort, readKeeperState, storeFiles } from '../../scripts/local-services/index.ts';

export const root = path.resolve(import.meta.dirname, '../..');

/**
 * The environment of a fresh machine for the launcher: nothing answers where it looks for a local Postgres
 * or Redis (ports nobody listens on), so it runs the embedded Postgres and a redis-server child of its own,
 * in `dataDir` and on ports of their own: never the run's shared stores.
 */
export async function embeddedEnv(dataDir: string): Promise<Record<string, string>> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    DATA_DIR: dataDir,
    LOCAL_DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${await freePort()}/pcg`,
    LOCAL_REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    CHILD_REDIS_PORT: String(await freePort()),
    REST_PORT: String(await freePort()),
    MCP_HTTP_PORT: String(await freePort()),
    AUDIT_FLUSH_MS: '200',
  };
}

export type Run = {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit status (or the signal's name). */
  exited: Promise<number | string | null>;
};

/** Runs a command in a process group of its own (as a terminal would), collecting its output. */
export function run(command: string, args: string[], env: Record<string, string>): Run {
  let output = '';
  const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return { child, output: () => output, exited };
}

export function launcher(env: Record<string, string>): Run {
  return run(process.execPath, [path.join(root, 'scripts/launcher.ts')], env);
}

export async function waitForLine(launched: Run, text: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    () => (launched.output().includes(text) ? true : launched.child.exitCode !== null ? Promise.reject(new Error(launched.output())) : undefined),
    timeoutMs,
    `"${text}" in\n${launched.output()}`,
  );
}

/** A zombie (ended, waiting for a PID 1 that may never reap it) counts as ended. */
export { isAlive as alive } from '../../scripts/local-services/index.ts';

function descendants(pid: number): number[] {
  const children = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** The launcher, its services and the keepers and stores of its data folder: everything that must end. */
export function processTree(launched: Run, dataDir: string): number[] {
  const services = descendants(launched.child.pid ?? -1);
  const stores = (['postgres', 'redis'] as const).flatMap((store) => {
    const state = readKeeperState(storeFiles(dataDir, store).stateFile);
    return state ? [state.keeperPid, state.storePid] : [];
  });
  return [launched.child.pid ?? -1, ...services, ...stores];
}

/** Lines at warn level or above, and lines that are not pino JSON at all (npm's own header and notices aside). */
export function problemLines(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('> ') && !line.startsWith('npm warn Unknown user config'))
    .filter((line) => {
      try {
        const { level } = JSON.parse(line) as { level?: unknown };
        return typeof level !== 'number' || level >= 40;
      } catch {
        return true;
      }
    });
}

/** Kills every process group a test started, whatever state it is in. */
export function killGroups(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** A process's state and command line, for a failure message. */
export function commandOf(pid: number): string {
  return spawnSync('ps', ['-o', 'stat=,args=', '-p', String(pid)], { encoding: 'utf8' }).stdout.trim();
}
