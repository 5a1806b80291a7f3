import { runService } from '@pcg/shared/lifecycle';
import { consoleConfigSchema } from './config.ts';
import { startConsole } from './service.ts';

await runService({
  name: 'console',
  configSchema: consoleConfigSchema,
  start: startConsole,
  readyFields: (consoleService) => ({ address: consoleService.address }),
});
