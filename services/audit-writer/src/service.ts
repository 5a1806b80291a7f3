import { createActivityDeriver } from '@pcg/shared/activity';
import { loadAuditChainKey, type AuditChainKey } from '@pcg/shared/crypto';
import { describeDatabaseUrl } from '@pcg/shared/db';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';
import { createMetrics, startMetricsPublisher } from '@pcg/shared/metrics';
import { describeRedisUrl } from '@pcg/shared/redis';
import { createAnchorKeeper, type AnchorKeeper } from './anchor.ts';
import type { AuditWriterConfig } from './config.ts';
import { loadSequenceMarks } from './sequence-marks.ts';
import { createAuditWriter, type AuditWriter } from './writer.ts';

export type RunningAuditWriter = Infrastructure & {
  /** Where the writer drains from and writes to, for the ready line. */
  address: string;
  writer: AuditWriter;
  anchors: AnchorKeeper;
};

/**
 * The audit-writer drains the Redis audit queue into `audit_log`, one INSERT per flush, every
 * `AUDIT_FLUSH_MS`, chaining each row to the one before it, and anchors the chain's head outside the
 * database every `AUDIT_ANCHOR_MS`. Closing (SIGTERM) writes what is queued and anchors the last head
 * before the connections are released.
 */
export async function startAuditWriter(config: AuditWriterConfig, log: Logger): Promise<RunningAuditWriter> {
  const infra = await openInfrastructure(config, 'audit-writer', log);
  let marks: Map<string, number>;
  let chainKey: AuditChainKey;
  try {
    marks = await loadSequenceMarks(infra.db);
    chainKey = await loadAuditChainKey(config.DATA_DIR, log);
  } catch (error) {
    await infra.close();
    throw error;
  }
  const writer = createAuditWriter({ db: infra.db, direct: infra.direct, redis: infra.redis, log, flushMs: config.AUDIT_FLUSH_MS, marks, chainKey: chainKey.bytes });
  writer.start();
  const metrics = createMetrics();
  metrics.watchAuditWriter(() => writer.stats().written);
  const publisher = startMetricsPublisher({ redis: infra.redis, metrics, service: 'audit-writer', everyMs: config.METRICS_PUBLISH_MS, log });
  const anchors = createAnchorKeeper({ head: writer.head, db: infra.db, key: chainKey, dataDir: config.DATA_DIR, log, intervalMs: config.AUDIT_ANCHOR_MS });
  anchors.start();
  // The activity rollup and alerts (design 8.5): counted from the rows this process committed, on a timer of its own.
  const activity = createActivityDeriver({ db: infra.db, log });
  activity.start();
  return {
    ...infra,
    writer,
    anchors,
    address: `${describeRedisUrl(config.REDIS_URL)} (prefix ${config.REDIS_PREFIX}) -> ${describeDatabaseUrl(config.DATABASE_URL)}`,
    async close() {
      await writer.close();
      await activity.close();
      await publisher.stop();
      await anchors.close();
      await infra.close();
    },
  };
}
