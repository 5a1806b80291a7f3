import { describeDatabaseUrl } from '@pcg/shared/db';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';
import { describeRedisUrl } from '@pcg/shared/redis';
import type { AuditWriterConfig } from './config.ts';

export type RunningAuditWriter = Infrastructure & {
  /** Where the writer drains from and writes to, for the ready line. */
  address: string;
};

/**
 * The audit-writer drains the Redis audit queue into `audit_log`, one INSERT per flush. The flush loop
 * arrives with the audit work; today it holds its connections and stops cleanly.
 */
export async function startAuditWriter(config: AuditWriterConfig, log: Logger): Promise<RunningAuditWriter> {
  const infra = await openInfrastructure(config, 'audit-writer', log);
  return {
    ...infra,
    address: `${describeRedisUrl(config.REDIS_URL)} (prefix ${config.REDIS_PREFIX}) -> ${describeDatabaseUrl(config.DATABASE_URL)}`,
  };
}
