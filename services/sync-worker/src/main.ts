import { runService } from '@pcg/shared/lifecycle';
import { withAlertNotifications } from './alert-notifications.ts';
import { syncWorkerConfigSchema } from './config.ts';
import { startSyncWorker } from './service.ts';

await runService({
  name: 'sync-worker',
  configSchema: syncWorkerConfigSchema,
  start: withAlertNotifications(startSyncWorker),
  readyFields: (worker) => ({ address: worker.address }),
});
