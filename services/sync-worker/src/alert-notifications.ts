import { createAlertNotifier, createDestinationStore } from '@pcg/shared/activity';
import { loadCredentialsKey } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import { createAddressPolicy, createOutboundFetch, gatewayOwnPorts } from '@pcg/shared/outbound';
import type { SyncWorkerConfig } from './config.ts';
import type { RunningSyncWorker, SyncWorkerOptions } from './service.ts';

type Start = (config: SyncWorkerConfig, log: Logger, options?: SyncWorkerOptions) => Promise<RunningSyncWorker>;

/**
 * The sync-worker, the one process that talks outward, also sends alerts and the daily digest to the
 * destination the operator saved (design 8.5, issue 41): through the outbound policy for source addresses,
 * off every tool call's path. Nothing is sent while no destination is saved.
 */
export function withAlertNotifications(start: Start): Start {
  return async (config, log, options) => {
    const worker = await start(config, log, options);
    const credentialsKey = await loadCredentialsKey(config, log);
    const outbound = createOutboundFetch(createAddressPolicy({ ownPorts: gatewayOwnPorts(config) }));
    const notifier = createAlertNotifier({ db: worker.db, destinations: createDestinationStore(worker.db, credentialsKey), fetch: outbound.fetch, log });
    notifier.start();
    return {
      ...worker,
      async close() {
        await notifier.close();
        await outbound.close();
        await worker.close();
      },
    };
  };
}
