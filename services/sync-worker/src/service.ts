import { describeDatabaseUrl } from '@pcg/shared/db';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';
import { describeRedisUrl } from '@pcg/shared/redis';
import type { SyncWorkerConfig } from './config.ts';

export type RunningSyncWorker = Infrastructure & {
  /** Where the worker takes its jobs from, for the ready line. */
  address: string;
};

/**
 * The sync-worker: the only process that talks to sources. Its queues (`sync`, `live`) and connectors
 * arrive with the connections work; today it holds its connections and stops cleanly.
 */
export async function startSyncWorker(config: SyncWorkerConfig, log: Logger): Promise<RunningSyncWorker> {
  const infra = await openInfrastructure(config, 'sync-worker', log);
  return {
    ...infra,
    address: `${describeRedisUrl(config.REDIS_URL)} (prefix ${config.REDIS_PREFIX}) -> ${describeDatabaseUrl(config.DATABASE_URL)}`,
  };
}
