import { auditConfig, dbConfig, logConfig, metricsConfig, redisConfig } from '@pcg/shared/config';

export const auditWriterConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...auditConfig.shape,
  ...metricsConfig.shape,
});

export type AuditWriterConfig = ReturnType<typeof auditWriterConfigSchema.parse>;
