import { Redis, type RedisOptions } from 'ioredis';

export type RedisSettings = {
  REDIS_URL: string;
  /** Every key, channel and BullMQ prefix starts with it. */
  REDIS_PREFIX: string;
};

/**
 * - `commands`: ordinary producer commands; keys are prefixed by ioredis, and a command fails fast
 *   when Redis is away instead of piling up (design: producers never block a response path).
 * - `subscriber`: a dedicated pub/sub connection (a subscribed ioredis client can run nothing else);
 *   channel names are built with `prefixed()`; subscribe through `keepSubscribed`, which renews it.
 * - `bullmq`: for BullMQ queues and workers, which refuse an ioredis `keyPrefix` and take the prefix
 *   through their own `prefix` option (`bullmqPrefix()`); blocking commands need unlimited retries.
 */
export type RedisPurpose = 'commands' | 'subscriber' | 'bullmq';

export function prefixed(settings: Pick<RedisSettings, 'REDIS_PREFIX'>, name: string): string {
  return `${settings.REDIS_PREFIX}${name}`;
}

/** BullMQ's key prefix: its keys become `<REDIS_PREFIX>bull:<queue>:…`. */
export function bullmqPrefix(settings: Pick<RedisSettings, 'REDIS_PREFIX'>): string {
  return `${settings.REDIS_PREFIX}bull`;
}

export function redisOptions(settings: RedisSettings, purpose: RedisPurpose, connectionName?: string): RedisOptions {
  const base: RedisOptions = {
    connectionName,
    // Reconnect with a capped backoff; the services keep running while Redis is away.
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  };
  switch (purpose) {
    case 'commands':
      return { ...base, keyPrefix: settings.REDIS_PREFIX, maxRetriesPerRequest: 1, enableOfflineQueue: true };
    case 'subscriber':
      // Re-subscribed by `keepSubscribed`, whose SUBSCRIBE after a reconnect has its rejection handled.
      return { ...base, maxRetriesPerRequest: null, autoResubscribe: false };
    case 'bullmq':
      return { ...base, maxRetriesPerRequest: null };
  }
}

export function createRedis(settings: RedisSettings, purpose: RedisPurpose, connectionName?: string): Redis {
  return new Redis(settings.REDIS_URL, redisOptions(settings, purpose, connectionName));
}

/** Resolves once the client is ready, or rejects with the connection error after `timeoutMs`. */
export async function waitForRedis(client: Redis, timeoutMs = 10_000): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      client.off('ready', onReady);
    };
    client.on('ready', onReady);
  });
}

/** The URL with any password replaced, for log lines. */
export function describeRedisUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

export { Redis } from 'ioredis';
