import type { Logger } from '@pcg/shared/logger';
import type { SyncProducer } from '@pcg/shared/queues';
import type { ConnectorRegistry } from '../connectors/registry.ts';
import type { ConnectionStore } from './connection-store.ts';

export type ReconcileResult = { added: string[]; changed: string[]; removed: string[] };

/**
 * Gives every schedulable connection of a pulling provider one scheduler at its interval, and removes the
 * schedulers of connections that are gone, paused or waiting for sign-in. The schedulers live in Redis and
 * the connections in Postgres, so this runs whenever the two may have drifted apart. A scheduler already
 * right is left alone (upserting it would start a sync).
 */
export async function reconcileSchedules(
  store: Pick<ConnectionStore, 'listSchedulable'>,
  producer: Pick<SyncProducer, 'schedule' | 'unschedule' | 'schedules'>,
  registry: ConnectorRegistry,
): Promise<ReconcileResult> {
  const wanted = new Map<string, number>();
  for (const connection of await store.listSchedulable()) {
    const connector = registry.get(connection.provider);
    const minutes = connection.sync_interval_minutes ?? connector?.provider.defaultSyncIntervalMinutes;
    if (connector?.sync && minutes) wanted.set(connection.id, minutes);
  }
  const existing = new Map((await producer.schedules()).map((entry) => [entry.connectionId, entry.everyMs]));
  const result: ReconcileResult = { added: [], changed: [], removed: [] };
  for (const [connectionId, minutes] of wanted) {
    const everyMs = existing.get(connectionId);
    if (everyMs === minutes * 60_000) continue;
    await producer.schedule(connectionId, minutes);
    (existing.has(connectionId) ? result.changed : result.added).push(connectionId);
  }
  for (const connectionId of existing.keys()) {
    if (wanted.has(connectionId)) continue;
    await producer.unschedule(connectionId);
    result.removed.push(connectionId);
  }
  return result;
}

export type ScheduleReconcilerDeps = {
  reconcile: () => Promise<ReconcileResult>;
  log: Logger;
  /** How often the schedulers are checked against the connections table, in milliseconds. */
  everyMs: number;
  /** How soon a failed run is tried again (Redis or Postgres away), in milliseconds; default 5000. */
  retryMs?: number;
};

/**
 * Keeps the schedulers reconciled: `trigger()` (called when Redis is ready again after a reconnect, whose
 * data may be gone) and a timer every `everyMs`. Runs never overlap; a trigger during a run runs once more
 * after it, so the last word is always a run that started after the trigger. Failures are logged and the
 * next trigger or tick tries again.
 */
export function createScheduleReconciler({ reconcile, log, everyMs, retryMs = 5_000 }: ScheduleReconcilerDeps) {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  async function runOnce(): Promise<void> {
    try {
      const result = await reconcile();
      if (result.added.length + result.changed.length + result.removed.length > 0) log.info(result, 'sync schedulers reconciled');
    } catch (error) {
      log.warn({ err: error }, 'could not reconcile the sync schedulers; will try again');
      clearTimeout(retry);
      retry = setTimeout(() => void trigger(), Math.min(retryMs, everyMs));
      retry.unref();
    }
  }

  function trigger(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await runOnce();
      } while (again && !stopped);
    })().finally(() => (running = undefined));
    return running;
  }

  const timer = setInterval(() => void trigger(), everyMs);
  timer.unref();

  return {
    trigger,
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      clearTimeout(retry);
      await running;
    },
  };
}

export type ScheduleReconciler = ReturnType<typeof createScheduleReconciler>;
