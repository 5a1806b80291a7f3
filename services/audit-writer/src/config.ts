import { z } from 'zod';
import { auditConfig, dataDirConfig, dbConfig, logConfig, metricsConfig, redisConfig } from '@pcg/shared/config';

export const auditWriterConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...auditConfig.shape,
  ...metricsConfig.shape,
  ...dataDirConfig.shape,
  /** How often the chain's head is anchored to the log stream and `DATA_DIR/audit-anchor.json` when it moved; default 60000. */
  AUDIT_ANCHOR_MS: z.coerce.number().int().positive().default(60_000),
});

export type AuditWriterConfig = ReturnType<typeof auditWriterConfigSchema.parse>;
