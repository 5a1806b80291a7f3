import { runService } from '@pcg/shared/lifecycle';
import { syncWorkerConfigSchema } from './config.ts';
import { startSyncWorker } from './service.ts';

await runService({
  name: 'sync-worker',
  configSchema: syncWorkerConfigSchema,
  start: startSyncWorker,
  readyFields: (worker) => ({ address: worker.address }),
});
