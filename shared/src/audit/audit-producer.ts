import type { Logger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import { buildAuditRow } from './audit-fns.ts';
import { enqueueAuditRow } from './audit-queue.ts';
import { AUDIT_LOG_LINES, type AuditEvent, type AuditRecorder } from './audit-types.ts';

export type AuditProducerDeps = {
  /** A `commands` client: the queue key gets REDIS_PREFIX from it. */
  redis: Redis;
  settings: { AUDIT_QUEUE_CAPACITY: number };
  log: Logger;
  /** The user every row belongs to; default `OPERATOR_USER_ID`. */
  userId?: number;
};

/** What became of one event. */
export type EnqueueResult = 'queued' | 'overflow' | 'failed' | 'invalid';

/** Counted by this process since it started; the overflow count across processes is in Redis. */
export type AuditProducerStats = {
  queued: number;
  /** Refused because the queue was full (logged as `[audit] queue overflow — dropped`). */
  overflow: number;
  /** Lost because Redis did not take the push (Redis away). */
  failed: number;
  /** Events that broke `AuditEventSchema` (a bug in the surface that reported them). */
  invalid: number;
};

export type AuditProducer = AuditRecorder & {
  /** `record`, awaitable, for callers off the response path and for tests. Never rejects. */
  enqueue(event: AuditEvent): Promise<EnqueueResult>;
  stats(): AuditProducerStats;
  /** Resolves once every enqueue started so far has settled; call before quitting Redis. */
  drain(): Promise<void>;
};

/**
 * The producer every surface uses (design 4.6). The row is built, redacted and capped at once, so the
 * caller may reuse its objects; the push to Redis then runs on its own: nothing waits for it, and a
 * failure is logged and counted, never thrown.
 */
export function createAuditProducer({ redis, settings, log, userId }: AuditProducerDeps): AuditProducer {
  const stats: AuditProducerStats = { queued: 0, overflow: 0, failed: 0, invalid: 0 };
  const pending = new Set<Promise<EnqueueResult>>();

  async function push(rowJson: string, tool: string, requestId: string): Promise<EnqueueResult> {
    try {
      if (await enqueueAuditRow(redis, rowJson, settings.AUDIT_QUEUE_CAPACITY)) {
        stats.queued += 1;
        return 'queued';
      }
      stats.overflow += 1;
      log.warn({ tool, requestId, capacity: settings.AUDIT_QUEUE_CAPACITY }, AUDIT_LOG_LINES.queueOverflow);
      return 'overflow';
    } catch (error) {
      stats.failed += 1;
      log.error({ err: error, tool, requestId }, '[audit] enqueue failed — dropped');
      return 'failed';
    }
  }

  function enqueue(event: AuditEvent): Promise<EnqueueResult> {
    let rowJson: string;
    let built: ReturnType<typeof buildAuditRow>;
    try {
      built = buildAuditRow(event, { userId });
      rowJson = JSON.stringify(built.row);
    } catch (error) {
      stats.invalid += 1;
      log.error({ err: error, tool: (event as { tool?: unknown })?.tool }, '[audit] event rejected — dropped');
      return Promise.resolve('invalid');
    }
    if (built.discardedSector !== undefined) {
      log.warn({ tool: built.row.tool, sector: built.discardedSector }, '[audit] sector is not a sector name; stored as null');
    }
    const promise = push(rowJson, built.row.tool, built.row.requestId);
    pending.add(promise);
    void promise.finally(() => pending.delete(promise));
    return promise;
  }

  return {
    record(event) {
      void enqueue(event);
    },
    enqueue,
    stats: () => ({ ...stats }),
    async drain() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}
