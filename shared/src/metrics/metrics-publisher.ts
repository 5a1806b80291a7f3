import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Logger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import { PROCESS_STARTED_AT, SERVICE_VERSION } from '../status/service-version.ts';
import type { Metrics } from './metrics-catalogue.ts';
import { PROCESS_INSTANCE } from './process-series.ts';

/** One hash (under REDIS_PREFIX): a field per running process, its latest snapshot as JSON. */
export const METRICS_SNAPSHOTS_KEY = 'metrics:snapshots';

/** A snapshot older than this many publish intervals belongs to a process that is gone. */
const STALE_AFTER_INTERVALS = 3;

const SnapshotSchema = z.object({
  service: z.string(),
  at: z.number(),
  staleAfterMs: z.number(),
  metrics: z.array(z.record(z.string(), z.unknown())),
  /** When the process started (epoch ms) and the release it runs: the Status screen's processes (issue 39). */
  startedAt: z.number().optional(),
  version: z.string().optional(),
  /** The process's instance label (host and pid); a snapshot without one is labelled by its field. */
  instance: z.string().optional(),
});

/**
 * Publishes this process's counters to Redis every `everyMs`, for the Console's `/metrics` to add up
 * (design: the four processes are separate, and only the Console has a scrape address). A process that
 * stops removes its snapshot; one that dies is ignored once its snapshot is stale.
 */
export function startMetricsPublisher(deps: { redis: Redis; metrics: Metrics; service: string; everyMs: number; log: Logger }): { stop(): Promise<void> } {
  const field = `${deps.service}:${randomUUID()}`;
  let publishing: Promise<unknown> = Promise.resolve();
  const publish = () => {
    publishing = (async () => {
      const snapshot = {
        service: deps.service,
        at: Date.now(),
        staleAfterMs: deps.everyMs * STALE_AFTER_INTERVALS,
        metrics: await deps.metrics.registry.getMetricsAsJSON(),
        startedAt: PROCESS_STARTED_AT,
        version: SERVICE_VERSION,
        instance: PROCESS_INSTANCE,
      };
      await deps.redis.hset(METRICS_SNAPSHOTS_KEY, field, JSON.stringify(snapshot));
    })().catch((error: unknown) => deps.log.debug({ err: error }, 'metrics not published'));
  };
  publish();
  const timer = setInterval(publish, deps.everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await publishing;
      await deps.redis.hdel(METRICS_SNAPSHOTS_KEY, field).catch(() => undefined);
    },
  };
}

export type PublishedMetrics = { service: string; instance: string; metrics: Array<Record<string, unknown>> };

/** The fresh snapshots of every process (metrics as `getMetricsAsJSON` gave them); stale ones are removed. */
export async function readPublishedMetrics(redis: Redis, now = Date.now()): Promise<PublishedMetrics[]> {
  const fields = await redis.hgetall(METRICS_SNAPSHOTS_KEY);
  const fresh: PublishedMetrics[] = [];
  const stale: string[] = [];
  for (const [field, raw] of Object.entries(fields)) {
    let parsed: z.ZodSafeParseResult<z.infer<typeof SnapshotSchema>>;
    try {
      parsed = SnapshotSchema.safeParse(JSON.parse(raw));
    } catch {
      stale.push(field);
      continue;
    }
    if (!parsed.success || now - parsed.data.at > parsed.data.staleAfterMs) stale.push(field);
    else fresh.push({ service: parsed.data.service, instance: parsed.data.instance ?? field, metrics: parsed.data.metrics });
  }
  if (stale.length > 0) await redis.hdel(METRICS_SNAPSHOTS_KEY, ...stale);
  return fresh;
}

/** A process that published a fresh snapshot: its service, when it started and what it runs. */
export type PublishedProcess = { service: string; instance: string | null; startedAt: number | null; version: string | null; seenAt: number };

/** The processes whose snapshots are fresh (a process that stopped or died is not among them). */
export async function readPublishedProcesses(redis: Redis, now = Date.now()): Promise<PublishedProcess[]> {
  const fields = await redis.hgetall(METRICS_SNAPSHOTS_KEY);
  return Object.values(fields).flatMap((raw) => {
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      return [];
    }
    const parsed = SnapshotSchema.safeParse(value);
    if (!parsed.success || now - parsed.data.at > parsed.data.staleAfterMs) return [];
    return [{ service: parsed.data.service, instance: parsed.data.instance ?? null, startedAt: parsed.data.startedAt ?? null, version: parsed.data.version ?? null, seenAt: parsed.data.at }];
  });
}
