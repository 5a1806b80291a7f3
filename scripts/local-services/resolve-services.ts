import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL } from '@pcg/shared/config';
import { ensureWritableDataDir } from './data-dir.ts';
import { hasEmbeddedCluster } from './embedded-postgres.ts';
import { joinKeeper, startKeeper, type KeptStore } from './keeper-client.ts';
import { commandLine, isAlive, parentPid } from './keeper-state.ts';
import { LaunchError } from './launch-error.ts';
import { portInUse, probePostgres, probeRedis } from './probe.ts';
import { redisServerOnPath } from './redis-server.ts';
import { StoreStartError } from './store-process.ts';

export { LaunchError } from './launch-error.ts';

export type ResolvedService = {
  url: string;
  /** How it was found: set in the environment, already running locally, or run by a keeper of this data folder. */
  origin: 'configured' | 'local' | 'embedded' | 'child';
  /** Present when a keeper runs it: ends this program's lease (the last lease stops it). */
  stop?: () => Promise<void>;
  /** Present when a keeper runs it: called if the store goes away while in use. */
  onLost?: (listener: () => void) => void;
  /** Present when a keeper runs it: see `KeptStore.hold`. */
  hold?: (pids: number[]) => void;
  /** Whether this program started it (rather than finding it running for another program). */
  startedHere?: boolean;
};

type ResolveOptions = {
  env: Record<string, string | undefined>;
  /** Where embedded Postgres and the Redis child keep their data (`./data`). */
  dataDir: string;
  log: (line: string) => void;
};

/** Swaps the database name in a server URL. */
export function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

/** Where the keeper of a store in this data folder publishes its port and pid, and where the store logs. */
export function storeFiles(dataDir: string, store: 'postgres' | 'redis') {
  return { stateFile: path.join(dataDir, `${store}.state.json`), logFile: path.join(dataDir, `${store}.log`) };
}

function kept(store: KeptStore, url: string, origin: 'embedded' | 'child'): ResolvedService {
  return { url, origin, stop: store.release, onLost: store.onLost, hold: store.hold, startedHere: store.startedHere };
}

/**
 * Starts the store under a keeper, or joins the keeper some other program of this data folder started
 * a moment before (two programs starting at once: the second one's store fails on the lock or the port).
 */
async function startOrJoin(start: () => Promise<KeptStore>, stateFile: string, log: (line: string) => void): Promise<KeptStore> {
  try {
    return await start();
  } catch (error) {
    const joined = await joinKeeper(stateFile, log);
    if (joined) return joined;
    throw error;
  }
}

/** An embedded Postgres that a killed launcher of the old kind (no keeper) left running on this cluster. */
async function stopOrphanPostgres(clusterDir: string, log: (line: string) => void): Promise<void> {
  const lockFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(lockFile)) return;
  const pid = Number(readFileSync(lockFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || !isAlive(pid) || !commandLine(pid).includes('postgres')) return;
  const parent = parentPid(pid);
  if (parent !== undefined && commandLine(parent).includes('store-keeper')) return;
  log(`stopping an embedded Postgres left running by an earlier launcher (pid ${pid})`);
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 15_000;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
}

async function refuseTakenPort(port: number, variable: string, what: string): Promise<void> {
  if (await portInUse(port)) {
    throw new LaunchError(`port ${port} (${variable}), where ${what} would listen, is already in use: stop what uses it, or set ${variable} to a free port`);
  }
}

export async function resolvePostgres({ env, dataDir, log }: ResolveOptions): Promise<ResolvedService> {
  if (env.DATABASE_URL) {
    const probe = await probePostgres(env.DATABASE_URL);
    if (!probe.ok) throw new LaunchError(`DATABASE_URL does not answer (${probe.message}); fix the URL or start that Postgres`);
    return { url: env.DATABASE_URL, origin: 'configured' };
  }
  const clusterDir = path.join(dataDir, 'postgres');
  const { stateFile, logFile } = storeFiles(dataDir, 'postgres');
  const running = await joinKeeper(stateFile, log);
  if (running) return kept(running, withDatabase(running.url, 'pcg'), 'embedded');

  const localUrl = env.LOCAL_DATABASE_URL || DEFAULT_DATABASE_URL;
  if (!hasEmbeddedCluster(clusterDir)) {
    const probe = await probePostgres(localUrl);
    if (probe.ok) return { url: localUrl, origin: 'local' };
    if (probe.reachable) {
      throw new LaunchError(
        `a Postgres answers at ${new URL(localUrl).host} but refused the default login (${probe.message}); ` +
          'set DATABASE_URL to a postgres:// URL whose user may create the database, e.g. postgres://user:pass@127.0.0.1:5432/pcg',
      );
    }
  }
  await ensureWritableDataDir(dataDir);
  await stopOrphanPostgres(clusterDir, log);
  const port = Number(env.EMBEDDED_POSTGRES_PORT || 54329);
  await refuseTakenPort(port, 'EMBEDDED_POSTGRES_PORT', 'the embedded Postgres');
  log(`starting the embedded Postgres (data in ${clusterDir}, port ${port}, its log in ${logFile})`);
  try {
    const store = await startOrJoin(() => startKeeper({ kind: 'postgres', clusterDir, port, stateFile, logFile }), stateFile, log);
    return kept(store, withDatabase(store.url, 'pcg'), 'embedded');
  } catch (error) {
    if (error instanceof StoreStartError) throw new LaunchError(`the embedded Postgres could not start: ${error.message}`);
    throw new LaunchError(
      `no Postgres answers at ${new URL(localUrl).host} and the embedded one could not start (${(error as Error).message || 'it exited'}; see ${logFile}); ` +
        'install PostgreSQL (apt-get install postgresql) or set DATABASE_URL',
    );
  }
}

export async function resolveRedis({ env, dataDir, log }: ResolveOptions): Promise<ResolvedService> {
  if (env.REDIS_URL) {
    const probe = await probeRedis(env.REDIS_URL);
    if (!probe.ok) throw new LaunchError(`REDIS_URL does not answer (${probe.message}); fix the URL or start that Redis`);
    return { url: env.REDIS_URL, origin: 'configured' };
  }
  const childDir = path.join(dataDir, 'redis');
  const { stateFile, logFile } = storeFiles(dataDir, 'redis');
  const running = await joinKeeper(stateFile, log);
  if (running) return kept(running, running.url, 'child');

  const localUrl = env.LOCAL_REDIS_URL || DEFAULT_REDIS_URL;
  if (!existsSync(childDir) && (await probeRedis(localUrl)).ok) return { url: localUrl, origin: 'local' };
  if (!redisServerOnPath()) {
    throw new LaunchError(
      `no Redis answers at ${localUrl} and redis-server is not on the PATH; ` +
        'install Redis (apt-get install redis-server) or set REDIS_URL',
    );
  }
  await ensureWritableDataDir(dataDir);
  const port = Number(env.CHILD_REDIS_PORT || 6389);
  await refuseTakenPort(port, 'CHILD_REDIS_PORT', 'the redis-server child');
  log(`starting redis-server (data in ${childDir}, port ${port}, its log in ${logFile})`);
  try {
    const store = await startOrJoin(() => startKeeper({ kind: 'redis', port, dataDir: childDir, stateFile, logFile }), stateFile, log);
    return kept(store, store.url, 'child');
  } catch (error) {
    throw new LaunchError(`redis-server could not start (${(error as Error).message}; see ${logFile}); install Redis or set REDIS_URL`);
  }
}
