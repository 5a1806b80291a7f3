import { DelayedError, type Job } from 'bullmq';
import { openCredentials } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import type { SyncJob, SyncJobResult } from '@pcg/shared/queues';
import type { ConnectorRegistry } from '../connectors/registry.ts';
import type { ConnectionStore } from './connection-store.ts';
import { handleSyncFailure, ShutdownError } from './failure-policy.ts';

/** A sync that finds another sync of its connection running waits this long and tries again. */
export const BUSY_RETRY_MS = 2_000;

export type SyncRunnerDeps = {
  store: ConnectionStore;
  registry: ConnectorRegistry;
  credentialsKey: Buffer;
  unschedule(connectionId: string): Promise<void>;
  log: Logger;
  /** Timeout of one request to a source. */
  requestTimeoutMs: number;
  /** Told of every sync that reached its connector, and how it ended (for the metrics); default none. */
  onRun?(provider: string, outcome: 'synced' | 'failed'): void;
};

/**
 * Runs one sync job: load the connection, take its lock, open its credentials, let the connector sync
 * through the upsert path, and store the cursor only when the whole sync succeeded. A sync cut short
 * (a failure, a crash, a kill) leaves the old cursor, so the next attempt covers the same ground again,
 * and the idempotent upserts make that harmless.
 */
export function createSyncRunner(deps: SyncRunnerDeps) {
  return async function runSync(job: Job, data: SyncJob, token: string | undefined, signal: AbortSignal | undefined): Promise<SyncJobResult> {
    const skipped = (detail: string): SyncJobResult => ({ outcome: 'skipped', detail, written: 0, removed: 0 });
    const connection = await deps.store.load(data.connectionId);
    if (!connection) {
      await deps.unschedule(data.connectionId);
      return skipped('the connection no longer exists');
    }
    if (connection.status === 'paused' || connection.status === 'needs_sign_in') return skipped(`the connection is ${connection.status}`);
    const connector = deps.registry.get(connection.provider);
    const sync = connector?.sync?.bind(connector);
    if (!sync) return skipped(`provider '${connection.provider}' has nothing to pull`);
    const log = deps.log.child({ connectionId: connection.id, provider: connection.provider, jobId: job.id });

    const controller = new AbortController();
    const onAbort = () => controller.abort(new ShutdownError());
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await deps.store.withSyncLock(connection.id, async () => {
        const credentials = connection.credentials ? openCredentials(deps.credentialsKey, connection.credentials, connection.id) : null;
        const cache = deps.store.cacheWriter(connection);
        log.debug({ reason: data.reason }, 'sync started');
        const outcome = await sync({
          connection: { id: connection.id, provider: connection.provider, sector: connection.sector, displayName: connection.display_name },
          credentials,
          cursor: connection.sync_cursor ?? null,
          signal: controller.signal,
          requestTimeoutMs: deps.requestTimeoutMs,
          cache,
          log,
        });
        await deps.store.recordSuccess(connection.id, outcome.cursor, outcome.actions);
        log.info({ mode: outcome.mode, ...cache.counts }, 'sync finished');
        deps.onRun?.(connection.provider, 'synced');
        return { outcome: 'synced', mode: outcome.mode, ...cache.counts } satisfies SyncJobResult;
      });
      if (result) return result;
    } catch (error) {
      if (!controller.signal.aborted) deps.onRun?.(connection.provider, 'failed');
      return handleSyncFailure(controller.signal.aborted ? new ShutdownError() : error, job, token, connection.id, {
        store: deps.store,
        unschedule: deps.unschedule,
        log,
      });
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    // Another sync of this connection holds the lock: run after it rather than drop this request.
    log.debug('another sync of this connection is running; trying again shortly');
    await job.moveToDelayed(Date.now() + BUSY_RETRY_MS, token);
    throw new DelayedError();
  };
}
