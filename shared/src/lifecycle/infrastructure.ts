import { openDatabase, type DatabasePool } from '../db/index.ts';
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
): Promise<Infrastructure> {
  const db = await openDatabase(config.DATABASE_URL);
  const redis = createRedis(config, 'commands', connectionName);
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
