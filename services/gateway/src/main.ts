import { runService } from '@pcg/shared/lifecycle';
import { gatewayConfigSchema } from './config.ts';
import { startGateway } from './service.ts';

await runService({
  name: 'gateway',
  configSchema: gatewayConfigSchema,
  start: startGateway,
  readyFields: (gateway) => ({ address: gateway.address, mcp: `${gateway.address}/mcp` }),
});
