import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { z } from 'zod';
import { commandLine, isAlive, KeeperStateSchema, readKeeperState, type KeeperSpec, type KeeperState } from './keeper-state.ts';
import { StoreStartError } from './store-process.ts';

/** A lease on a store that a keeper runs: held until `release`, or until this process ends. */
export type KeptStore = {
  url: string;
  port: number;
  keeperPid: number;
  /** The store's own process (postgres or redis-server), which the keeper started. */
  storePid: number;
  /** Whether this process started the keeper (rather than joining one already running). */
  startedHere: boolean;
  /** Ends the lease; when it was the last one, resolves once the store and its keeper have stopped. */
  release(): Promise<void>;
  /** Called once if the keeper goes away while the lease is held (the store crashed or was killed). */
  onLost(listener: () => void): void;
  /**
   * Names the processes that use the store on this holder's behalf: should this holder vanish without a
   * release (`kill -9`), the store keeps running until they have ended too.
   */
  hold(pids: number[]): void;
};

const KEEPER_ENTRY = path.join(import.meta.dirname, 'store-keeper.ts');
const STOP_WAIT_MS = 15_000;

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

async function lease(state: KeeperState, startedHere: boolean): Promise<KeptStore> {
  const socket = net.connect({ host: '127.0.0.1', port: state.leasePort });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.setEncoding('utf8');
  socket.on('error', () => undefined);
  let releasing = false;
  const lostListeners: Array<() => void> = [];
  let answer = '';
  socket.on('data', (text: string) => (answer += text));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void closed.then(() => {
    if (!releasing) for (const listener of lostListeners) listener();
  });
  return {
    url: state.url,
    port: state.port,
    keeperPid: state.keeperPid,
    storePid: state.storePid,
    startedHere,
    onLost: (listener) => void lostListeners.push(listener),
    hold(pids) {
      if (!releasing) socket.write(`hold ${pids.join(',')}\n`);
    },
    async release() {
      if (releasing) return;
      releasing = true;
      socket.write('release\n');
      await closed;
      if (answer.startsWith('last') && !(await waitForExit(state.keeperPid, STOP_WAIT_MS))) {
        throw new Error(`the store keeper (pid ${state.keeperPid}) did not stop within ${STOP_WAIT_MS / 1000} s`);
      }
    },
  };
}

/**
 * Joins the keeper named in `stateFile` when it is alive. A state file left by a keeper that was killed
 * is cleaned up, with the store it left running (found by its pid), and `undefined` is returned.
 */
export async function joinKeeper(stateFile: string, log: (line: string) => void): Promise<KeptStore | undefined> {
  const state = readKeeperState(stateFile);
  if (!state) return undefined;
  const keeperCommand = commandLine(state.keeperPid);
  if (isAlive(state.keeperPid) && (keeperCommand === '' || keeperCommand.includes('store-keeper'))) {
    try {
      return await lease(state, false);
    } catch {
      // It is stopping (its last lease just ended): let it finish, then start a new one.
      await waitForExit(state.keeperPid, STOP_WAIT_MS);
      return undefined;
    }
  }
  if (isAlive(state.storePid) && /postgres|redis-server/.test(commandLine(state.storePid))) {
    log(`stopping a store left running by a keeper that was killed (pid ${state.storePid})`);
    process.kill(state.storePid, 'SIGINT');
    if (!(await waitForExit(state.storePid, STOP_WAIT_MS))) process.kill(state.storePid, 'SIGKILL');
  }
  await rm(stateFile, { force: true });
  return undefined;
}

/** Starts a keeper for `spec` in a session of its own and takes the first lease. */
export async function startKeeper(spec: KeeperSpec, onLine: (line: string) => void = () => undefined): Promise<KeptStore> {
  const child = spawn(process.execPath, [KEEPER_ENTRY, JSON.stringify(spec)], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  readline.createInterface({ input: child.stderr }).on('line', (line) => {
    lines.push(line);
    onLine(line);
  });
  const first = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve);
    child.once('error', reject);
    child.once('exit', (code) => resolve(`FAILED ${JSON.stringify({ message: `the store keeper exited with status ${code}: ${lines.slice(-5).join(' | ')}` })}`));
  });
  const [verdict, ...rest] = first.split(' ');
  const payload: unknown = JSON.parse(rest.join(' '));
  if (verdict !== 'READY') throw new StoreStartError(z.object({ message: z.string() }).parse(payload).message);
  const state = KeeperStateSchema.parse(payload);
  const kept = await lease(state, true);
  child.stdout.destroy();
  child.stderr.destroy();
  child.unref();
  return kept;
}
