import { auditConfig, bindConfig, consolePortConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';

export const consoleConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...consolePortConfig.shape,
  ...auditConfig.shape,
});

export type ConsoleConfig = ReturnType<typeof consoleConfigSchema.parse>;
