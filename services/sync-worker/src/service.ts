import type { Worker } from 'bullmq';
import { loadCredentialsKey } from '@pcg/shared/crypto';
import { describeDatabaseUrl } from '@pcg/shared/db';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';
import { openSyncProducer, type SyncProducer } from '@pcg/shared/queues';
import { describeRedisUrl } from '@pcg/shared/redis';
import type { SyncWorkerConfig } from './config.ts';
import { createConnectorRegistry, type ConnectorRegistry } from './connectors/registry.ts';
import { createLiveRunner } from './live/live-runner.ts';
import { createConnectionStore, type ConnectionStore } from './sync/connection-store.ts';
import { createSyncRunner } from './sync/sync-runner.ts';
import { closeWorkerGracefully, startQueueWorker, type JobHandler } from './workers.ts';

export type RunningSyncWorker = Infrastructure & {
  /** Where the worker takes its jobs from, for the ready line. */
  address: string;
};

/**
 * Gives every schedulable connection of a pulling provider one scheduler at its interval, and removes the
 * schedulers of connections that are gone, paused or waiting for sign-in. Run at start, so schedules lost
 * with Redis come back; a scheduler already right is left alone (upserting it would start a sync).
 */
export async function reconcileSchedules(store: ConnectionStore, producer: SyncProducer, registry: ConnectorRegistry): Promise<void> {
  const wanted = new Map<string, number>();
  for (const connection of await store.listSchedulable()) {
    const connector = registry.get(connection.provider);
    const minutes = connection.sync_interval_minutes ?? connector?.provider.defaultSyncIntervalMinutes;
    if (connector?.sync && minutes) wanted.set(connection.id, minutes);
  }
  const existing = new Map((await producer.schedules()).map((entry) => [entry.connectionId, entry.everyMs]));
  for (const [connectionId, minutes] of wanted) {
    if (existing.get(connectionId) !== minutes * 60_000) await producer.schedule(connectionId, minutes);
  }
  for (const connectionId of existing.keys()) {
    if (!wanted.has(connectionId)) await producer.unschedule(connectionId);
  }
}

/**
 * The sync-worker: the only process that talks to sources and the only holder of decrypted credentials.
 * It serves the `sync` queue (scheduled and manual syncs) and the `live` queue (live reads, actions).
 */
export async function startSyncWorker(config: SyncWorkerConfig, log: Logger): Promise<RunningSyncWorker> {
  const registry = createConnectorRegistry();
  const credentialsKey = await loadCredentialsKey(config, log);
  const infra = await openInfrastructure(config, 'sync-worker', log);
  const workers: Worker[] = [];
  let producer: (SyncProducer & { close(): Promise<void> }) | undefined;
  try {
    producer = await openSyncProducer(config, log);
    const store = createConnectionStore(infra.db);
    const unschedule = producer.unschedule;
    const common = { store, registry, credentialsKey, unschedule, log, requestTimeoutMs: config.SOURCE_TIMEOUT_MS };
    const workerOptions = { settings: config, log, lockMs: config.SYNC_LOCK_MS, backoffMs: config.SYNC_BACKOFF_MS };
    workers.push(
      startQueueWorker('sync', { sync: createSyncRunner(common) as JobHandler }, { ...workerOptions, concurrency: config.SYNC_CONCURRENCY }),
      startQueueWorker(
        'live',
        { fetch_live: createLiveRunner(common) as JobHandler, invoke_action: createLiveRunner(common) as JobHandler },
        { ...workerOptions, concurrency: config.LIVE_CONCURRENCY },
      ),
    );
    await Promise.all(workers.map((worker) => worker.waitUntilReady()));
    await reconcileSchedules(store, producer, registry);
  } catch (error) {
    await Promise.all(workers.map((worker) => worker.close(true)));
    await producer?.close();
    await infra.close();
    throw error;
  }
  const openProducer = producer;
  return {
    ...infra,
    address: `${describeRedisUrl(config.REDIS_URL)} (prefix ${config.REDIS_PREFIX}) -> ${describeDatabaseUrl(config.DATABASE_URL)}`,
    async close() {
      await Promise.all(workers.map((worker) => closeWorkerGracefully(worker, config.SHUTDOWN_GRACE_MS)));
      await openProducer.close();
      await infra.close();
    },
  };
}
