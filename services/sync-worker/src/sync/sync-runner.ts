import { DelayedError, type Job } from 'bullmq';
import type { Logger } from '@pcg/shared/logger';
import type { SyncJob, SyncJobResult } from '@pcg/shared/queues';
import type { RefreshCredentials } from '../connectors/connector-types.ts';
import type { ConnectorRegistry } from '../connectors/registry.ts';
import { buildConnectorContext } from '../run/connector-context.ts';
import { createFailureMapper, ShutdownError, withTokenRefresh } from '../run/failure-mapper.ts';
import type { ConnectionStore } from './connection-store.ts';
import { syncWithResync } from './full-resync.ts';

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
  /** Token refresh of a connection's sign-in; default: refused. */
  refreshCredentials?: RefreshCredentials;
  /** Told of every sync that reached its connector, and how it ended (for the metrics); default none. */
  onRun?(provider: string, outcome: 'synced' | 'failed'): void;
  /** Pairs the finance accounts two connections both deliver (spec 2.1), after each finance sync; default none. */
  matchAccounts?(): Promise<unknown>;
};

/**
 * Runs one sync job: load the connection, take its lock, build the connector's context, let the connector
 * sync through the upsert path (refreshing an expired token once, resyncing in full once when the cursor
 * expired), and store the cursor only when the whole sync succeeded. A sync cut short (a failure, a crash,
 * a kill) leaves the old cursor, so the next attempt covers the same ground again, and the idempotent
 * upserts make that harmless.
 */
export function createSyncRunner(deps: SyncRunnerDeps) {
  const failures = createFailureMapper(deps);
  // A failed pairing must not fail a sync that stored its rows: the next finance sync pairs again.
  const matchAccounts = async (log: Logger) => {
    try {
      await deps.matchAccounts?.();
    } catch (error) {
      log.error({ err: error }, 'finance account matching failed');
    }
  };
  return async function runSync(job: Job, data: SyncJob, token: string | undefined, signal: AbortSignal | undefined): Promise<SyncJobResult> {
    const skipped = (detail: string): SyncJobResult => ({ outcome: 'skipped', detail, written: 0, removed: 0 });
    const connection = await deps.store.load(data.connectionId);
    if (!connection) {
      await deps.unschedule(data.connectionId);
      return skipped('the connection no longer exists');
    }
    if (connection.status === 'paused' || connection.status === 'needs_sign_in') return skipped(`the connection is ${connection.status}`);
    const connector = deps.registry.get(connection.provider, connection.demo_endpoints);
    const sync = connector?.sync?.bind(connector);
    if (!sync) return skipped(`provider '${connection.provider}' has nothing to pull`);
    const log = deps.log.child({ connectionId: connection.id, provider: connection.provider, jobId: job.id });

    const controller = new AbortController();
    const onAbort = () => controller.abort(new ShutdownError());
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await deps.store.withSyncLock(connection.id, async () => {
        const saveProgress = (cursor: unknown) => deps.store.saveCursor(connection.id, cursor);
        const context = buildConnectorContext(deps, connection, { signal: controller.signal, requestTimeoutMs: deps.requestTimeoutMs, log, saveProgress });
        log.debug({ reason: data.reason }, 'sync started');
        const outcome = await withTokenRefresh(context, () => syncWithResync(context, sync, connector?.provider.objects ?? []));
        if (outcome.notRun !== undefined) {
          log.info({ reason: outcome.notRun }, 'sync not run');
          return skipped(outcome.notRun);
        }
        await deps.store.recordSuccess(connection.id, outcome);
        log.info({ mode: outcome.mode, ...context.cache.counts }, 'sync finished');
        deps.onRun?.(connection.provider, 'synced');
        return { outcome: 'synced', mode: outcome.mode, ...context.cache.counts } satisfies SyncJobResult;
      });
      if (result) {
        if (result.outcome === 'synced' && connection.sector === 'finance') await matchAccounts(log);
        return result;
      }
    } catch (error) {
      if (!controller.signal.aborted) deps.onRun?.(connection.provider, 'failed');
      return failures.sync(controller.signal.aborted ? new ShutdownError() : error, job, token, connection.id);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    // Another sync of this connection holds the lock: run after it rather than drop this request.
    log.debug('another sync of this connection is running; trying again shortly');
    await job.moveToDelayed(Date.now() + BUSY_RETRY_MS, token);
    throw new DelayedError();
  };
}
