import { openDatabase, type DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import { createRedis, waitForRedis, type Redis, type RedisSettings } from '../redis/index.ts';

export type Infrastructure = {
  db: DatabasePool;
  /** A `commands` client: keys are prefixed with REDIS_PREFIX. */
  redis: Redis;
  /** Ends the pool and quits Redis; call after the service stopped taking work. */
  close(): Promise<void>;
};

/** Opens the database and Redis every service needs, failing fast (and releasing both) if either is away. */
export async function openInfrastructure(
  config: RedisSettings & { DATABASE_URL: string },
  connectionName: string,
  log: Logger,
): Promise<Infrastructure> {
  const db = await openDatabase(config.DATABASE_URL);
  const redis = createRedis(config, 'commands', connectionName);
  // ioredis retries on its own; without a listener every failed attempt is an "unhandled error event".
  redis.on('error', (error: Error) => log.warn({ err: error }, 'redis connection error'));
  try {
    await waitForRedis(redis);
  } catch (error) {
    redis.disconnect();
    await db.end();
    throw error;
  }
  return {
    db,
    redis,
    async close() {
      await db.end();
      await redis.quit();
    },
  };
}
