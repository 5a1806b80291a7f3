import { openDatabase, type DatabasePool, type DirectPool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import { createRedis, waitForRedis, type Redis, type RedisSettings } from '../redis/index.ts';

export type Infrastructure = {
  db: DatabasePool;
  /** pg's own pool to the same database (db/direct-reads.ts), for the query engine, the key lookup and COPY. */
  direct: DirectPool;
  /** A `commands` client: keys are prefixed with REDIS_PREFIX. */
  redis: Redis;
  /** Ends both pools and quits Redis; call after the service stopped taking work. */
  close(): Promise<void>;
};

/** Opens the database and Redis every service needs, failing fast (and releasing both) if either is away. */
export async function openInfrastructure(
  config: RedisSettings & { DATABASE_URL: string },
  connectionName: string,
  log: Logger,
): Promise<Infrastructure> {
  const database = await openDatabase(config.DATABASE_URL);
  const redis = createRedis(config, 'commands', connectionName);
  // ioredis retries on its own; without a listener every failed attempt is an "unhandled error event".
  redis.on('error', (error: Error) => log.warn({ err: error }, 'redis connection error'));
  try {
    await waitForRedis(redis);
  } catch (error) {
    redis.disconnect();
    await database.end();
    throw error;
  }
  return {
    db: database.pool,
    direct: database.direct,
    redis,
    async close() {
      await database.end();
      await redis.quit();
    },
  };
}
