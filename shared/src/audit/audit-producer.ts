import { randomUUID } from 'node:crypto';
import type { DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import { createDropLedger, type AuditDropReason } from './audit-drops.ts';
import { buildAuditRow } from './audit-fns.ts';
import { pushAuditBatch } from './audit-queue.ts';
import { AUDIT_LOG_LINES, type AuditEvent, type AuditRecorder } from './audit-types.ts';

/** Default of `AUDIT_BUFFER_CAPACITY`. */
export const AUDIT_BUFFER_CAPACITY = 50_000;
/** Rows sent to Redis in one script call. */
const PUSH_BATCH_SIZE = 500;
/** Pause between two tries while Redis is unreachable. */
const RETRY_MS = 200;
/** How often drop counts are moved into Postgres. */
const PERSIST_DROPS_MS = 1_000;

export type AuditProducerDeps = {
  /** A `commands` client: the queue key gets REDIS_PREFIX from it. */
  redis: Redis;
  /** Where drop counts are kept (`audit_drops`); without it they are only in `stats()` (tests, benchmarks). */
  db?: Pick<DatabasePool, 'query'>;
  /** The process kind the drop counts are filed under; default `producer`. */
  source?: string;
  settings: { AUDIT_QUEUE_CAPACITY: number; AUDIT_BUFFER_CAPACITY?: number };
  log: Logger;
  /** The user every row belongs to; default `OPERATOR_USER_ID`. */
  userId?: number;
};

/** What became of one event. */
export type EnqueueResult = 'queued' | 'overflow' | 'failed' | 'invalid';

/** Counted by this process since it started; the durable counts across processes are in `audit_drops`. */
export type AuditProducerStats = {
  queued: number;
  /** Refused because the queue was full (logged as `[audit] queue overflow — dropped`). */
  overflow: number;
  /** Lost because Redis stayed away: the buffer was full, or the producer stopped while holding them. */
  failed: number;
  /** Events that broke `AuditEventSchema` (a bug in the surface that reported them). */
  invalid: number;
  /** Rows held in memory now, waiting for Redis. */
  buffered: number;
};

export type AuditProducer = AuditRecorder & {
  /** `record`, awaitable, for callers off the response path and for tests. Never rejects. */
  enqueue(event: AuditEvent): Promise<EnqueueResult>;
  stats(): AuditProducerStats;
  /**
   * Resolves once every row recorded so far is queued or dropped, giving Redis up to `timeoutMs` (default
   * 5000) to come back; rows still held then are dropped and counted. Stores the drop counts. Call before
   * quitting Redis and the pool.
   */
  drain(options?: { timeoutMs?: number }): Promise<void>;
};

type Held = { json: string; tool: string; requestId: string; settle: (result: EnqueueResult) => void };

/**
 * The producer every surface uses (design 4.6). The row is built, redacted and capped at once, so the
 * caller may reuse its objects; it then waits in a bounded in-process buffer that one pump sends to Redis
 * in order, a batch per script call. Nothing on a response path waits for it. While Redis is unreachable
 * the rows stay in the buffer and go out when it returns; a full buffer drops new rows. Every loss is
 * logged and counted in Postgres (`audit_drops`), so the count survives a Redis restart.
 */
export function createAuditProducer({ redis, db, source = 'producer', settings, log, userId }: AuditProducerDeps): AuditProducer {
  const bufferCapacity = settings.AUDIT_BUFFER_CAPACITY ?? AUDIT_BUFFER_CAPACITY;
  const stats = { queued: 0, overflow: 0, failed: 0, invalid: 0 };
  const drops = db ? createDropLedger({ db, source, log }) : undefined;
  const producerId = randomUUID();
  let nextSeq = 1;
  let buffer: Held[] = [];
  let pumping: Promise<void> | undefined;
  let redisAway = false;
  let stopPumping = false;
  let refusedWhileAway = 0;
  let persistTimer: NodeJS.Timeout | undefined;

  function dropped(reason: AuditDropReason, rows: number): void {
    if (!drops) return;
    drops.add(reason, rows);
    persistTimer ??= setTimeout(() => {
      persistTimer = undefined;
      void drops.persist();
    }, PERSIST_DROPS_MS).unref();
  }

  async function sendBatch(batch: Held[]): Promise<boolean> {
    try {
      const answer = await pushAuditBatch(redis, {
        producerId,
        firstSeq: nextSeq,
        rows: batch.map((held) => held.json),
        capacity: settings.AUDIT_QUEUE_CAPACITY,
      });
      const taken = answer.already + answer.queued;
      nextSeq += taken;
      stats.queued += taken;
      for (const held of batch.slice(0, taken)) held.settle('queued');
      for (const held of batch.slice(taken)) {
        stats.overflow += 1;
        log.warn({ tool: held.tool, requestId: held.requestId, capacity: settings.AUDIT_QUEUE_CAPACITY }, AUDIT_LOG_LINES.queueOverflow);
        held.settle('overflow');
      }
      dropped('queueOverflow', answer.refused);
      if (redisAway) {
        redisAway = false;
        log.info({ stillHeld: buffer.length - batch.length, droppedWhileAway: refusedWhileAway }, '[audit] Redis is back; sending the rows held');
        refusedWhileAway = 0;
      }
      return true;
    } catch (error) {
      if (!redisAway) {
        redisAway = true;
        log.warn({ err: error, held: buffer.length, capacity: bufferCapacity }, '[audit] Redis unreachable; holding rows until it returns');
      }
      return false;
    }
  }

  async function pump(): Promise<void> {
    while (buffer.length > 0 && !stopPumping) {
      const batch = buffer.slice(0, PUSH_BATCH_SIZE);
      if (await sendBatch(batch)) buffer = buffer.slice(batch.length);
      else await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }

  function startPump(): void {
    pumping ??= pump().finally(() => {
      pumping = undefined;
      if (buffer.length > 0 && !stopPumping) startPump();
    });
  }

  function enqueue(event: AuditEvent): Promise<EnqueueResult> {
    let built: ReturnType<typeof buildAuditRow>;
    let json: string;
    try {
      built = buildAuditRow(event, { userId });
      json = JSON.stringify(built.row);
    } catch (error) {
      stats.invalid += 1;
      dropped('invalid', 1);
      log.error({ err: error, tool: (event as { tool?: unknown })?.tool }, '[audit] event rejected — dropped');
      return Promise.resolve('invalid');
    }
    if (built.discardedSector !== undefined) {
      log.warn({ tool: built.row.tool, sector: built.discardedSector }, '[audit] sector is not a sector name; stored as null');
    }
    if (buffer.length >= bufferCapacity) {
      stats.failed += 1;
      dropped('bufferOverflow', 1);
      // One line when the buffer first fills, then a count when Redis returns: not one per row.
      if (refusedWhileAway === 0) log.error({ capacity: bufferCapacity }, '[audit] buffer full while Redis is away — dropping new rows');
      refusedWhileAway += 1;
      return Promise.resolve('failed');
    }
    const { promise, resolve } = Promise.withResolvers<EnqueueResult>();
    buffer.push({ json, tool: built.row.tool, requestId: built.row.requestId, settle: resolve });
    startPump();
    return promise;
  }

  async function drain({ timeoutMs = 5_000 }: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (buffer.length > 0 && Date.now() < deadline) {
      await Promise.race([pumping, new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MS, timeoutMs)))]);
    }
    // Let a send in flight finish (it fails fast while Redis is away), then give up what is left.
    stopPumping = true;
    await pumping;
    stopPumping = false;
    const left = buffer;
    buffer = [];
    if (left.length > 0) {
      stats.failed += left.length;
      dropped('gaveUp', left.length);
      log.error({ dropped: left.length }, '[audit] Redis still away at shutdown — dropped the rows held');
      for (const held of left) held.settle('failed');
    }
    clearTimeout(persistTimer);
    persistTimer = undefined;
    await drops?.persist();
  }

  return {
    record(event) {
      void enqueue(event);
    },
    enqueue,
    stats: () => ({ ...stats, buffered: buffer.length }),
    drain,
  };
}
