/**
 * The keeper: one small process per local store (the embedded Postgres, the redis-server child) that owns
 * it, outside the terminal's process group. Every program using the store holds a lease (an open TCP
 * connection to the keeper); when the last lease ends, however its holder ended (a clean release, a
 * crash, `kill -9`), the keeper stops the store and exits. So no store outlives its users, a Ctrl-C in
 * the terminal never reaches the store before the services are done with it, and several entry points
 * (`npm start`, `npm run seed:demo`, …) share one store instead of starting it twice.
 *
 * Protocol with the process that starts it: one stdout line, `READY <state json>` or `FAILED <message>`.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import net from 'node:net';
import readline from 'node:readline';
import { isAlive, KeeperSpecSchema, removeKeeperState, writeKeeperState, type KeeperState } from './keeper-state.ts';
import { POSTGRES_PASSWORD, POSTGRES_USER, startPostgresProcess, startRedisProcess, StoreStartError, type StoreProcess } from './store-process.ts';

/** How long a freshly started keeper waits for its first lease before deciding its starter is gone. */
const FIRST_LEASE_MS = 15_000;
/** How long the store waits for the processes of a vanished holder (they stop within their own grace). */
const DEPENDENTS_WAIT_MS = 30_000;

const spec = KeeperSpecSchema.parse(JSON.parse(process.argv[2] ?? '{}'));
// The keeper runs in a session of its own; these could only come from a stray `kill`, and the leases decide.
for (const signal of ['SIGINT', 'SIGHUP'] as const) process.on(signal, () => undefined);

let logFile: WriteStream | undefined;
let announced = false;
const onLine = (line: string) => {
  if (!announced) process.stderr.write(`${line}\n`);
  logFile?.write(`${line}\n`);
};

async function start(): Promise<{ store: StoreProcess; url: string }> {
  if (spec.logFile) logFile = createWriteStream(spec.logFile, { flags: 'a', mode: 0o600 });
  if (spec.kind === 'postgres') {
    const store = await startPostgresProcess(spec, onLine);
    return { store, url: `postgres://${POSTGRES_USER}:${POSTGRES_PASSWORD}@127.0.0.1:${spec.port}/postgres` };
  }
  const store = await startRedisProcess(spec, onLine);
  return { store, url: `redis://127.0.0.1:${spec.port}` };
}

async function main(): Promise<void> {
  let started: Awaited<ReturnType<typeof start>>;
  try {
    started = await start();
  } catch (error) {
    const message = error instanceof StoreStartError ? error.message : String((error as Error).message ?? error);
    process.stdout.write(`FAILED ${JSON.stringify({ message })}\n`);
    process.exit(1);
  }
  const { store, url } = started;
  const leases = new Set<net.Socket>();
  let stopping = false;

  const stop = async (status: number) => {
    if (stopping) return;
    stopping = true;
    server.close();
    await store.stop();
    if (spec.stateFile) await removeKeeperState(spec.stateFile, process.pid);
    for (const lease of leases) lease.destroy();
    logFile?.end();
    process.exit(status);
  };

  // Processes a holder said use the store (the launcher's services): when the holder vanishes without a
  // release, the store waits for them to end (they stop on their own when the launcher is gone).
  const dependents = new Set<number>();
  const stopAfterDependents = async () => {
    const deadline = Date.now() + DEPENDENTS_WAIT_MS;
    while ([...dependents].some(isAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    if (leases.size === 0) await stop(0);
  };

  const server = net.createServer((socket) => {
    if (stopping) return void socket.destroy();
    leases.add(socket);
    clearTimeout(firstLease);
    let held: number[] = [];
    let released = false;
    socket.setEncoding('utf8');
    socket.on('error', () => undefined);
    readline.createInterface({ input: socket }).on('line', (line) => {
      const [verb, argument = ''] = line.split(' ');
      if (verb === 'hold') held = argument.split(',').map(Number).filter(Number.isInteger);
      if (verb === 'release') {
        released = true;
        // Tell the holder whether the store stops with it, so it can wait for that.
        socket.end(leases.size === 1 ? 'last\n' : 'shared\n');
      }
    });
    socket.on('close', () => {
      leases.delete(socket);
      if (!released) for (const pid of held) dependents.add(pid);
      if (leases.size === 0) void stopAfterDependents();
    });
  });
  const firstLease = setTimeout(() => void stop(0), FIRST_LEASE_MS);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const state: KeeperState = {
    keeperPid: process.pid,
    storePid: store.pid,
    port: spec.port,
    leasePort: typeof address === 'object' && address ? address.port : 0,
    url,
  };
  if (spec.stateFile) await writeKeeperState(spec.stateFile, state);

  void store.exited.then(() => {
    if (!stopping) {
      onLine(`${spec.kind} exited on its own; the keeper stops`);
      void stop(1);
    }
  });
  process.on('SIGTERM', () => void stop(0));

  process.stdout.write(`READY ${JSON.stringify(state)}\n`);
  announced = true;
}

await main();
