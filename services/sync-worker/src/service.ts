import type { Worker } from 'bullmq';
import { loadCredentialsKey } from '@pcg/shared/crypto';
import { describeDatabaseUrl } from '@pcg/shared/db';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';
import { createMetrics, startMetricsPublisher } from '@pcg/shared/metrics';
import { openSyncProducer, type OpenSyncProducer } from '@pcg/shared/queues';
import { describeRedisUrl } from '@pcg/shared/redis';
import type { SyncWorkerConfig } from './config.ts';
import type { Connector, RefreshCredentials } from './connectors/connector-types.ts';
import { demoICloudOptions, icloudOptions } from './connectors/icloud/icloud-local-override.ts';
import { createConnectorRegistry, defaultConnectors } from './connectors/registry.ts';
import { createSourceOutbound } from './connectors/kit/source-outbound.ts';
import { createOriginRebaser, PLAID } from '@pcg/shared/providers';
import { createItemRemoveRunner } from './sign-ins/item-remove.ts';
import { linkAppLoader, type LinkApp } from './sign-ins/link-aggregators.ts';
import { createLinkRunners } from './sign-ins/link-flow.ts';
import { createOAuthExchangeRunner } from './sign-ins/oauth-exchange.ts';
import { createTokenClaimRunner } from './sign-ins/token-claim.ts';
import { refreshThroughSignIns } from './sign-ins/refresh-credentials.ts';
import { createTokenRefresher } from './sign-ins/token-refresh.ts';
import { createLiveRunner } from './live/live-runner.ts';
import { createCheckRunner } from './check/check-runner.ts';
import { createConnectionStore } from './sync/connection-store.ts';
import { createScheduleReconciler, reconcileSchedules, type ScheduleReconciler } from './sync/schedule-reconciler.ts';
import { createSyncRunner } from './sync/sync-runner.ts';
import { createAccountMatchService } from '@pcg/shared/finance';
import { closeWorkerGracefully, startQueueWorker, type QueueHandlers } from './workers.ts';

export type RunningSyncWorker = Infrastructure & {
  /** Where the worker takes its jobs from, for the ready line. */
  address: string;
};

/**
 * The sync-worker: the only process that talks to sources and the only holder of decrypted credentials.
 * It serves the `sync` queue (scheduled and manual syncs), the `live` queue (live reads, actions) and
 * the `signin` queue (provider code exchanges, hosted links, item removals). `options.connectors`
 * replaces the connector list (tests add a connector for a test provider).
 */
export type SyncWorkerOptions = {
  /** Replaces the connector list (tests add a connector for a test provider). */
  connectors?: readonly Connector[];
  /** Token refresh of a connection's sign-in; default: the sign-ins' own refresher (`createTokenRefresher`). */
  refreshCredentials?: RefreshCredentials;
};

/** The connection check's two jobs on the `live` queue (issue 32). */
function checkHandlers(runner: ReturnType<typeof createCheckRunner>): Pick<QueueHandlers<'live'>, 'check_connection' | 'check_credentials'> {
  return { check_connection: runner.runConnectionCheck, check_credentials: runner.runCredentialCheck };
}

export async function startSyncWorker(config: SyncWorkerConfig, log: Logger, options: SyncWorkerOptions = {}): Promise<RunningSyncWorker> {
  const rebaseUrl = createOriginRebaser(config);
  const icloud = icloudOptions(config);
  if (config.ICLOUD_RESOLVE.size > 0) log.warn({ names: [...config.ICLOUD_RESOLVE.keys()] }, 'ICLOUD_RESOLVE sends these iCloud names to local servers');
  // A link provider's application is read from the database, which opens after the registry is checked.
  let loadLinkApp: (kind: string) => Promise<LinkApp | null> = async () => null;
  const linkApps = (kind: string) => loadLinkApp(kind);
  const plaid = { loadApp: () => linkApps(PLAID.kind) };
  const outbound = createSourceOutbound(config);
  const connectorOptions = { calendarWindow: { pastDays: config.CALENDAR_PAST_DAYS, futureDays: config.CALENDAR_FUTURE_DAYS }, icloud, plaid, outbound };
  const registry = options.connectors
    ? createConnectorRegistry(options.connectors)
    : createConnectorRegistry(defaultConnectors(rebaseUrl, connectorOptions), (demo) => defaultConnectors(createOriginRebaser(demo), { ...connectorOptions, icloud: demoICloudOptions(demo) }));
  const credentialsKey = await loadCredentialsKey(config, log);
  const infra = await openInfrastructure(config, 'sync-worker', log);
  loadLinkApp = linkAppLoader(infra.db, credentialsKey);
  const metrics = createMetrics();
  const onRun = (provider: string, outcome: 'synced' | 'failed') => {
    metrics.syncRuns.inc({ provider });
    if (outcome === 'failed') metrics.syncFailures.inc({ provider });
  };
  const workers: Worker[] = [];
  let producer: OpenSyncProducer | undefined;
  let reconciler: ScheduleReconciler | undefined;
  let stopWatching: (() => void) | undefined;
  try {
    producer = await openSyncProducer(config, log);
    const store = createConnectionStore(infra.db);
    const unschedule = producer.unschedule;
    const refreshCredentials = options.refreshCredentials ?? refreshThroughSignIns(createTokenRefresher({ db: infra.db, credentialsKey, log, requestTimeoutMs: config.SOURCE_TIMEOUT_MS, rebaseUrl }));
    const accountMatches = createAccountMatchService({ db: infra.db });
    const common = { store, registry, credentialsKey, unschedule, log, requestTimeoutMs: config.SOURCE_TIMEOUT_MS, refreshCredentials, onRun, matchAccounts: accountMatches.reconcile };
    const workerOptions = { settings: config, log, lockMs: config.SYNC_LOCK_MS, backoffMs: config.SYNC_BACKOFF_MS };
    const checks = createCheckRunner({ ...common, rebaseUrl, loadPlaidApp: plaid.loadApp, givenAddressFetch: outbound.fetch, icloud });
    workers.push(
      startQueueWorker('sync', { sync: createSyncRunner(common) }, { ...workerOptions, concurrency: config.SYNC_CONCURRENCY }),
      startQueueWorker(
        'live',
        {
          fetch_live: createLiveRunner(common),
          invoke_action: createLiveRunner(common),
          ...checkHandlers(checks),
        },
        { ...workerOptions, concurrency: config.LIVE_CONCURRENCY },
      ),
      startQueueWorker(
        'signin',
        {
          oauth_exchange: createOAuthExchangeRunner({ db: infra.db, credentialsKey, sync: producer, log, requestTimeoutMs: config.SOURCE_TIMEOUT_MS, rebaseUrl }),
          ...createLinkRunners({ db: infra.db, credentialsKey, sync: producer, log, requestTimeoutMs: config.SOURCE_TIMEOUT_MS, rebaseUrl, loadApp: linkApps }),
          item_remove: createItemRemoveRunner({ credentialsKey, log, requestTimeoutMs: config.SOURCE_TIMEOUT_MS, rebaseUrl, loadApp: linkApps }),
          token_claim: createTokenClaimRunner({
            db: infra.db,
            credentialsKey,
            sync: producer,
            log,
            requestTimeoutMs: config.SOURCE_TIMEOUT_MS,
            allowLoopback: config.SIMPLEFIN_ALLOW_LOOPBACK,
            outbound,
            checkCredentials: checks.credentialStep,
          }),
        },
        { ...workerOptions, concurrency: 2 },
      ),
    );
    await Promise.all(workers.map((worker) => worker.waitUntilReady()));
    const syncProducer = producer;
    await reconcileSchedules(store, syncProducer, registry);
    // Schedulers live in Redis and are lost with it: check them again on every reconnect, and every
    // minute in case a reconnect went unseen or a connection changed without its scheduler following.
    reconciler = createScheduleReconciler({
      reconcile: () => reconcileSchedules(store, syncProducer, registry),
      log,
      everyMs: config.SCHEDULE_RECONCILE_MS,
    });
    const watched = reconciler;
    stopWatching = await syncProducer.onReconnect(() => {
      log.info('redis is back; reconciling the sync schedulers');
      void watched.trigger();
    });
  } catch (error) {
    stopWatching?.();
    await reconciler?.stop();
    await Promise.all(workers.map((worker) => closeWorkerGracefully(worker, 0, log)));
    await producer?.close();
    await infra.close();
    await outbound.close();
    throw error;
  }
  const openProducer = producer;
  const openReconciler = reconciler;
  const unwatch = stopWatching;
  const publisher = startMetricsPublisher({ redis: infra.redis, metrics, service: 'sync-worker', everyMs: config.METRICS_PUBLISH_MS, log });
  return {
    ...infra,
    address: `${describeRedisUrl(config.REDIS_URL)} (prefix ${config.REDIS_PREFIX}) -> ${describeDatabaseUrl(config.DATABASE_URL)}`,
    async close() {
      unwatch?.();
      await openReconciler?.stop();
      await Promise.all(workers.map((worker) => closeWorkerGracefully(worker, config.SHUTDOWN_GRACE_MS, log)));
      await openProducer.close();
      await publisher.stop();
      await infra.close();
      await outbound.close();
    },
  };
}
