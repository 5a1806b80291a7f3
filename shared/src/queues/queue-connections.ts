import type { Queue, QueueEvents, RedisOptions as BullRedisOptions } from 'bullmq';
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

/**
 * BullMQ (some 250 modules and 5–7 MB of heap) is loaded when a queue is first opened, not when this folder is
 * imported: a service that imports `@pcg/shared/queues` for its config or types, or that opens its
 * requesters on first use (the gateway), does not carry it until it queues a job.
 */
const loadBullmq = () => import('bullmq');

/** A producer Queue with the catalogue's default job options and an error listener; ready when returned. */
export async function openQueue(settings: RedisSettings, queue: QueueName, log: Logger, connectionName = `${queue}-producer`): Promise<Queue> {
  const { Queue } = await loadBullmq();
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
  const { QueueEvents } = await loadBullmq();
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
