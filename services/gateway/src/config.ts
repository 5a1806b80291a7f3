import { agentPortConfig, auditConfig, bindConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';
import { liveConfig } from '@pcg/shared/queues';

export const gatewayConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...agentPortConfig.shape,
  ...auditConfig.shape,
  ...liveConfig.shape,
});

export type GatewayConfig = ReturnType<typeof gatewayConfigSchema.parse>;
