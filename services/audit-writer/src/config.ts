import { auditConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';

export const auditWriterConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...auditConfig.shape,
});

export type AuditWriterConfig = ReturnType<typeof auditWriterConfigSchema.parse>;
