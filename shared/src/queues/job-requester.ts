import type { Job, Queue, QueueEvents } from 'bullmq';
import type { Logger } from '../logger/index.ts';
import type { RedisSettings } from '../redis/index.ts';
import type { QueueName } from './job-catalogue.ts';
import { openQueue, openQueueEvents } from './queue-connections.ts';

/** A producer queue and the events its jobs are awaited on: what every requester is made from. */
export type RequesterQueue = { queue: Queue; events: QueueEvents };

/** How an awaited job ended: its return value, or the error it failed or timed out with. */
export type JobOutcome = { finished: true; value: unknown } | { finished: false; timedOut: boolean; error: Error };

/**
 * Awaits a job's return value for at most `timeoutMs`. A job still waiting then is taken back, so that it
 * never runs after the caller gave up on it.
 */
export async function awaitJob(job: Job, events: QueueEvents, timeoutMs: number): Promise<JobOutcome> {
  try {
    return { finished: true, value: await job.waitUntilFinished(events, timeoutMs) };
  } catch (thrown) {
    const error = thrown as Error;
    const timedOut = /timed out/.test(error.message);
    if (timedOut) await job.remove().catch(() => undefined);
    return { finished: false, timedOut, error };
  }
}

/**
 * Opens a producer queue and its events and makes a requester over them; the requester's `close()`
 * releases both. If the events cannot be opened, the queue is closed again before the error is thrown.
 */
export async function openRequester<T extends object>(
  settings: RedisSettings,
  name: QueueName,
  log: Logger,
  make: (connection: RequesterQueue) => T,
): Promise<T & { close(): Promise<void> }> {
  const queue = await openQueue(settings, name, log);
  let events: QueueEvents;
  try {
    events = await openQueueEvents(settings, name, log);
  } catch (error) {
    await queue.close();
    throw error;
  }
  return {
    ...make({ queue, events }),
    async close() {
      await events.close();
      await queue.close();
    },
  };
}
