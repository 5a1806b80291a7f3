import { agentPortConfig, auditConfig, bindConfig, consolePortConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';

export const consoleConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...consolePortConfig.shape,
  ...auditConfig.shape,
  /** Served as `service` by describe_context. */
  SERVICE_NAME: agentPortConfig.shape.SERVICE_NAME,
});

export type ConsoleConfig = ReturnType<typeof consoleConfigSchema.parse>;
