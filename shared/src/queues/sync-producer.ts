import type { Queue } from 'bullmq';
import type { Logger } from '../logger/index.ts';
import type { RedisSettings } from '../redis/index.ts';
import { QUEUES, SyncJobSchema, syncSchedulerId, type SyncJob } from './job-catalogue.ts';
import { openQueue } from './queue-connections.ts';

/**
 * Enqueues syncs: one job scheduler per active connection at its interval, and manual syncs. A manual
 * sync asked for while one is still waiting is the same job (deduplicated per connection).
 */
export function createSyncProducer(queue: Queue) {
  return {
    /** Creates or moves the connection's scheduler; the first run starts at once. */
    async schedule(connectionId: string, intervalMinutes: number): Promise<void> {
      const data = SyncJobSchema.parse({ connectionId, reason: 'scheduled' } satisfies SyncJob);
      await queue.upsertJobScheduler(
        syncSchedulerId(connectionId),
        { every: intervalMinutes * 60_000 },
        { name: 'sync', data, opts: QUEUES.sync.defaultJobOptions },
      );
    },

    async unschedule(connectionId: string): Promise<void> {
      await queue.removeJobScheduler(syncSchedulerId(connectionId));
    },

    /** Queues one sync now; returns the job id (an already waiting manual sync's id when deduplicated). */
    async requestSync(connectionId: string, reason: SyncJob['reason'] = 'manual'): Promise<string> {
      const data = SyncJobSchema.parse({ connectionId, reason } satisfies SyncJob);
      const job = await queue.add('sync', data, { deduplication: { id: `sync:${connectionId}` } });
      return job.id ?? '';
    },

    /** The connections that have a scheduler and its interval, for reconciliation at worker start. */
    async schedules(): Promise<Array<{ connectionId: string; everyMs: number | undefined }>> {
      const schedulers = await queue.getJobSchedulers(0, -1);
      return schedulers.flatMap((scheduler) => {
        const key = scheduler.key ?? scheduler.id ?? '';
        return key.startsWith('connection:') ? [{ connectionId: key.slice('connection:'.length), everyMs: scheduler.every }] : [];
      });
    },
  };
}

export type SyncProducer = ReturnType<typeof createSyncProducer>;

export type OpenSyncProducer = SyncProducer & {
  /**
   * Calls `listener` each time the producer's connection is ready again after losing Redis (whose data,
   * schedulers included, may be gone with it); returns a function that removes the listener.
   */
  onReconnect(listener: () => void): Promise<() => void>;
  close(): Promise<void>;
};

/** Opens a fail-fast producer queue for `sync` and wraps it; `close()` releases the connection. */
export async function openSyncProducer(settings: RedisSettings, log: Logger): Promise<OpenSyncProducer> {
  const queue = await openQueue(settings, 'sync', log);
  return {
    ...createSyncProducer(queue),
    async onReconnect(listener) {
      const backend = queue.getBackend();
      // The queue is ready when opened, so every later 'ready' follows a lost connection.
      backend.on('ready', listener);
      return () => void backend.off('ready', listener);
    },
    close: () => queue.close(),
  };
}
