import { existsSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL } from '@pcg/shared/config';
import { hasEmbeddedCluster, startEmbeddedPostgres } from './embedded-postgres.ts';
import { probePostgres, probeRedis } from './probe.ts';
import { redisServerOnPath, startRedisServer } from './redis-server.ts';

/** A problem the operator must fix; its message says what to install or set. */
export class LaunchError extends Error {}

export type ResolvedService = {
  url: string;
  /** How it was found: set in the environment, already running locally, or started by us. */
  origin: 'configured' | 'local' | 'embedded' | 'child';
  /** Present when we started it; stops it. */
  stop?: () => Promise<void>;
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

export async function resolvePostgres({ env, dataDir, log }: ResolveOptions): Promise<ResolvedService> {
  if (env.DATABASE_URL) {
    const probe = await probePostgres(env.DATABASE_URL);
    if (!probe.ok) throw new LaunchError(`DATABASE_URL does not answer (${probe.message}); fix the URL or start that Postgres`);
    return { url: env.DATABASE_URL, origin: 'configured' };
  }
  const embeddedDir = path.join(dataDir, 'postgres');
  if (!hasEmbeddedCluster(embeddedDir)) {
    const probe = await probePostgres(DEFAULT_DATABASE_URL);
    if (probe.ok) return { url: DEFAULT_DATABASE_URL, origin: 'local' };
    if (probe.reachable) {
      throw new LaunchError(
        `a Postgres answers at 127.0.0.1:5432 but refused the default login (${probe.message}); ` +
          'set DATABASE_URL to a postgres:// URL whose user may create the database, e.g. postgres://user:pass@127.0.0.1:5432/pcg',
      );
    }
  }
  const port = Number(env.EMBEDDED_POSTGRES_PORT ?? 54329);
  log(`starting the embedded Postgres (data in ${embeddedDir}, port ${port})`);
  try {
    const server = await startEmbeddedPostgres({ dataDir: embeddedDir, port, persistent: true });
    return { url: withDatabase(server.url, 'pcg'), origin: 'embedded', stop: server.stop };
  } catch (error) {
    throw new LaunchError(
      `no Postgres answers at 127.0.0.1:5432 and the embedded one could not start (${(error as Error).message || 'it exited'}); ` +
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
  if (!existsSync(childDir) && (await probeRedis(DEFAULT_REDIS_URL)).ok) return { url: DEFAULT_REDIS_URL, origin: 'local' };
  if (!redisServerOnPath()) {
    throw new LaunchError(
      'no Redis answers at redis://127.0.0.1:6379 and redis-server is not on the PATH; ' +
        'install Redis (apt-get install redis-server) or set REDIS_URL',
    );
  }
  const port = Number(env.CHILD_REDIS_PORT ?? 6389);
  log(`starting redis-server (data in ${childDir}, port ${port})`);
  const server = await startRedisServer({ port, dataDir: childDir });
  return { url: server.url, origin: 'child', stop: server.stop };
}
