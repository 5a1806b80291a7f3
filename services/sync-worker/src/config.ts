import { dataDirConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';

export const syncWorkerConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...dataDirConfig.shape,
});

export type SyncWorkerConfig = ReturnType<typeof syncWorkerConfigSchema.parse>;
