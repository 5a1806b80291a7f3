import { agentPortConfig, auditConfig, bindConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';

export const gatewayConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...agentPortConfig.shape,
  ...auditConfig.shape,
});

export type GatewayConfig = ReturnType<typeof gatewayConfigSchema.parse>;
