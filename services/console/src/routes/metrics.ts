import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry, Counter, Gauge, type PrometheusContentType, type Registry } from 'prom-client';
import type { DatabasePool } from 'slonik';
import { AUDIT_DROP_REASONS, readAuditDrops, readAuditQueueDepth, type AuditDropReason } from '@pcg/shared/audit';
import { createConnectionQueries } from '@pcg/shared/connections';
import type { Logger } from '@pcg/shared/logger';
import type { LedgerVerifier } from './audit-verify.ts';
import { labelProcessSeries, PROCESS_INSTANCE, readPublishedMetrics, type Metrics } from '@pcg/shared/metrics';
import type { Redis } from '@pcg/shared/redis';
import { readPart, readRedisPart } from '@pcg/shared/status';

/** Adds one gauge to the scrape's registry, its values read just now. */
function gauge(registry: Registry, name: string, help: string, labelNames: string[], values: Array<{ labels: Record<string, string>; value: number }>): void {
  const metric = new Gauge({ name, help, labelNames, registers: [registry] });
  for (const { labels, value } of values) metric.set(labels, value);
}

/**
 * GET /metrics (Prometheus text format), behind the Host check like every Console route. The counters of
 * the other processes come from the snapshots they publish to Redis, added up with the Console's own;
 * what is durable or shared is read at scrape time: rows dropped (Postgres `audit_drops`, across every
 * process and restart), the audit queue depth (Redis) and each connection's data age (Postgres). A store
 * that is down leaves its metrics out of this scrape rather than failing it.
 */
export function registerMetricsRoute(
  app: FastifyInstance,
  deps: { db: DatabasePool; redis: Redis; metrics: Metrics; log: Logger; chain?: Pick<LedgerVerifier, 'last'> },
): void {
  app.get('/metrics', async (_request, reply) => {
    const [published, depth, drops, ages] = await Promise.all([
      readRedisPart(deps.redis, () => readPublishedMetrics(deps.redis)),
      readRedisPart(deps.redis, () => readAuditQueueDepth(deps.redis)),
      readPart('postgres', () => readAuditDrops(deps.db)),
      readPart('postgres', () => createConnectionQueries(deps.db).list()),
    ]);
    const snapshots = published.ok ? published.value : [];
    // Each process's series keep their own service and instance labels (counters per process, beside its start time).
    const registry = AggregatorRegistry.aggregate<PrometheusContentType>([
      labelProcessSeries(await deps.metrics.registry.getMetricsAsJSON(), { service: 'console', instance: PROCESS_INSTANCE }),
      ...snapshots.map((snapshot) => labelProcessSeries(snapshot.metrics, { service: snapshot.service, instance: snapshot.instance })),
    ]);
    const processes = new Map<string, number>([['console', 1]]);
    for (const { service } of snapshots) processes.set(service, (processes.get(service) ?? 0) + 1);
    gauge(registry, 'pcg_metrics_processes', 'Processes whose counters this scrape adds up, by service.', ['service'], [...processes].map(([service, value]) => ({ labels: { service }, value })));
    const chain = deps.chain?.last();
    if (chain) {
      // The last walk of the chain (the Console's ledger or `pcg audit verify` runs one): walking every row on each scrape would cost too much.
      gauge(registry, 'pcg_audit_chain_intact', 'Whether the last verification found the audit chain intact (1) or broken (0).', [], [{ labels: {}, value: chain.intact ? 1 : 0 }]);
      gauge(registry, 'pcg_audit_chain_verified_rows', 'Rows the last verification proved intact.', [], [{ labels: {}, value: chain.intactThrough.row }]);
      gauge(registry, 'pcg_audit_chain_verified_timestamp_seconds', 'When the audit chain was last verified.', [], [{ labels: {}, value: Date.parse(chain.verifiedAt) / 1000 }]);
    }
    if (depth.ok) gauge(registry, 'pcg_audit_queue_depth', 'Audit rows waiting in the Redis queue.', [], [{ labels: {}, value: depth.value }]);
    if (drops.ok) {
      // A fresh counter each scrape, set to the durable total.
      const dropped = new Counter({ name: 'pcg_audit_rows_dropped_total', help: 'Audit rows dropped since the database was created, by reason.', labelNames: ['reason'], registers: [registry] });
      for (const [reason, rows] of Object.entries(drops.value) as Array<[AuditDropReason, number]>) dropped.inc({ reason: AUDIT_DROP_REASONS[reason] }, rows);
    }
    if (ages.ok) {
      gauge(registry, 'pcg_connection_data_age_seconds', 'Seconds since each connection last synced (never-synced connections are absent), by connection id, display name, sector and provider.', ['connection', 'name', 'sector', 'provider'],
        ages.value.flatMap((row) =>
          row.last_synced_at === null ? [] : [{ labels: { connection: row.id, name: row.display_name, sector: row.sector, provider: row.provider }, value: Math.max(0, (Date.now() - Date.parse(row.last_synced_at)) / 1000) }],
        ));
    }
    if (!published.ok || !depth.ok || !drops.ok || !ages.ok) deps.log.warn('metrics scraped with a store down; its metrics are left out');
    return reply.header('content-type', registry.contentType).send(await registry.metrics());
  });
}
