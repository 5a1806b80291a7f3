import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDatabase, type Database, type DatabasePool, type DirectPool } from '@pcg/shared/db';
import { createLogger, type Logger } from '@pcg/shared/logger';
import { createRedis, type Redis } from '@pcg/shared/redis';

export type TestEnvironment = {
  /** A database of this file's own, cloned from the migrated template. */
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** This file's own Redis prefix; every key it leaves is deleted afterwards. */
  readonly redisPrefix: string;
  readonly db: DatabasePool;
  /** The same database's direct pool (`Database.direct`), for what takes one: the query engine, the key resolver, the audit-writer. */
  readonly direct: DirectPool;
  /** A `commands` client under this file's prefix. */
  readonly redis: Redis;
  /** Environment variables for a service's config schema, pointed at this file's database, prefix and data folder. */
  env(overrides?: Record<string, string>): Record<string, string>;
};

/** The server URL with another database's name. */
export function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Runs one statement on the server's own connection (CREATE or DROP DATABASE cannot run in the database itself). */
export async function asAdmin(serverUrl: string, statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/** Where a test file's database comes from: made ready before its tests, let go after them. */
export type TestDatabaseSource = {
  /** The database's URL (a source may know it only once it is prepared, and then throws before). */
  url(): string;
  prepare(): Promise<void>;
  release(): Promise<void>;
};

/**
 * Call once at the top of an integration test file: before the tests it creates a database cloned from
 * the migrated template and a unique Redis prefix; after them it drops both. Files run in parallel.
 */
export function useTestEnvironment(): TestEnvironment {
  const serverUrl = inject('pgServerUrl');
  const template = inject('templateDatabase');
  const databaseName = `pcg_t_${randomBytes(6).toString('hex')}`;
  const admin = (statement: string) => asAdmin(serverUrl, statement);
  const databaseUrl = withDatabase(serverUrl, databaseName);
  return useTestEnvironmentOn({
    url: () => databaseUrl,
    prepare: () => admin(`CREATE DATABASE ${pg.escapeIdentifier(databaseName)} TEMPLATE ${pg.escapeIdentifier(template)}`),
    release: () => admin(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(databaseName)} WITH (FORCE)`),
  });
}

/** A test file's environment on a database from `source`: its own Redis prefix and data folder, cleared after its tests. */
export function useTestEnvironmentOn(source: TestDatabaseSource): TestEnvironment {
  const redisUrl = inject('redisUrl');
  const suffix = randomBytes(6).toString('hex');
  const redisPrefix = `pcg-test:${suffix}:`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `pcg-t-${suffix}-`));
  let database: Database | undefined;
  let redis: Redis | undefined;

  beforeAll(async () => {
    await source.prepare();
    database = await createDatabase(source.url(), { maximumPoolSize: 5 });
    redis = createRedis({ REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix }, 'commands', 'test');
  });

  afterAll(async () => {
    await database?.end();
    if (redis) {
      await deleteKeysWithPrefix(redis, redisPrefix);
      await redis.quit();
    }
    await source.release();
    await rm(dataDir, { recursive: true, force: true });
  });

  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is available only inside tests and hooks`);
    return value;
  };

  return {
    get databaseUrl() {
      return source.url();
    },
    redisUrl,
    redisPrefix,
    get db() {
      return ready(database, 'db').pool;
    },
    get direct() {
      return ready(database, 'direct').direct;
    },
    get redis() {
      return ready(redis, 'redis');
    },
    env(overrides = {}) {
      return { DATABASE_URL: source.url(), REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix, DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...overrides };
    },
  };
}

/** Deletes every key under a prefix, SCAN by SCAN (the client's own keyPrefix is not applied to SCAN). */
async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    // The client prefixes what it sends; strip the prefix so DEL names the real keys.
    if (keys.length > 0) await redis.del(...keys.map((key) => key.slice(prefix.length)));
  } while (cursor !== '0');
}

/** A logger whose lines are kept in memory, for tests that assert what is (and is not) logged. */
export function createCapturingLogger(name = 'test'): { log: Logger; lines: () => string[] } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString('utf8'));
      callback();
    },
  });
  const log = createLogger({ name, level: 'trace', destination });
  return { log, lines: () => chunks.join('').split('\n').filter((line) => line.length > 0) };
}

/** Polls until `check` returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
