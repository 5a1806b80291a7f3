import { Queue, QueueEvents, type RedisOptions as BullRedisOptions } from 'bullmq';
import type { Logger } from '../logger/index.ts';
import { bullmqPrefix, type RedisSettings } from '../redis/index.ts';
import { QUEUES, type QueueName } from './job-catalogue.ts';

/**
 * Producer connections fail fast: with Redis away, `add()` rejects at once instead of queueing in memory
 * behind a request (conventions: queues). Workers and QueueEvents block, so they retry forever.
 */
export function producerConnection(settings: RedisSettings, name: string): BullRedisOptions {
  return { ...blockingConnection(settings, name), maxRetriesPerRequest: 1, enableOfflineQueue: false };
}

/** BullMQ builds its own clients from these (and duplicates them for blocking reads); never a keyPrefix. */
export function blockingConnection(settings: RedisSettings, name: string): BullRedisOptions {
  return {
    url: settings.REDIS_URL,
    connectionName: name,
    maxRetriesPerRequest: null,
    retryStrategy: (times: number) => Math.min(times * 200, 5_000),
  };
}

/** A producer Queue with the catalogue's default job options and an error listener; ready when returned. */
export async function openQueue(settings: RedisSettings, queue: QueueName, log: Logger, connectionName = `${queue}-producer`): Promise<Queue> {
  const instance = new Queue(QUEUES[queue].name, {
    connection: producerConnection(settings, connectionName),
    prefix: bullmqPrefix(settings),
    defaultJobOptions: QUEUES[queue].defaultJobOptions,
  });
  instance.on('error', (error) => log.warn({ err: error, queue }, 'queue connection error'));
  try {
    await instance.waitUntilReady();
  } catch (error) {
    await instance.close().catch(() => undefined);
    throw error;
  }
  return instance;
}

export async function openQueueEvents(settings: RedisSettings, queue: QueueName, log: Logger): Promise<QueueEvents> {
  const events = new QueueEvents(QUEUES[queue].name, {
    connection: blockingConnection(settings, `${queue}-events`),
    prefix: bullmqPrefix(settings),
  });
  events.on('error', (error) => log.warn({ err: error, queue }, 'queue events connection error'));
  try {
    await events.waitUntilReady();
  } catch (error) {
    await events.close().catch(() => undefined);
    throw error;
  }
  return events;
}
