import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import { buildAuditRow } from './audit-fns.ts';
import { createProducerDrops } from './audit-producer-drops.ts';
import { RETRY_MS, createProducerPump } from './audit-producer-pump.ts';
import { makeRoom, redisReachable, settle, unsent, type EnqueueResult, type ProducerState } from './audit-producer-state.ts';
import { auditEntry } from './audit-queue.ts';
import { openAuditSpool, type AuditSpool } from './audit-spool.ts';
import type { AuditEvent, AuditRecorder } from './audit-types.ts';

export type { EnqueueResult } from './audit-producer-state.ts';

/** Default of `AUDIT_BUFFER_CAPACITY`. */
export const AUDIT_BUFFER_CAPACITY = 50_000;

/** The log line of a row refused because the buffer is full while Redis is unreachable (issue 44: the only such refusal). */
export const AUDIT_BUFFER_FULL_LOG_LINE = '[audit] buffer full while Redis is away — dropping new rows';

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
  /**
   * `DATA_DIR`: with it (and `db`), every row is kept in `DATA_DIR/audit-spool/<source>.jsonl` until the
   * writer has stored it (design 8.4). Without it rows wait in memory only, as in tests and benchmarks.
   */
  spoolDir?: string;
};

/** Counted by this process since it started; the durable counts across processes are in `audit_drops`. */
export type AuditProducerStats = {
  /** Acknowledged by Redis: in its queue. */
  queued: number;
  /** Refused because the queue was full (logged as `[audit] queue overflow — dropped`). */
  overflow: number;
  /** Lost because Redis stayed away: the buffer was full, or the producer stopped while holding them. */
  failed: number;
  /** Events that broke `AuditEventSchema` (a bug in the surface that reported them). */
  invalid: number;
  /** Rows held now that Redis has not taken yet. */
  buffered: number;
};

export type AuditProducer = AuditRecorder & {
  /** `record`, awaitable, for callers off the response path and for tests. Never rejects. */
  enqueue(event: AuditEvent): Promise<EnqueueResult>;
  stats(): AuditProducerStats;
  /**
   * Resolves once every row recorded so far is queued or dropped, giving Redis up to `timeoutMs` (default
   * 5000) to come back; rows still held then are dropped and counted, or, with a spool, left in it for the
   * next start. Stores the drop counts. Call before quitting Redis and the pool.
   */
  drain(options?: { timeoutMs?: number }): Promise<void>;
};

/** Opens the spool, or explains in the log why this process runs without one. */
function openSpool(spoolDir: string | undefined, source: string, log: Logger): (AuditSpool & { unreadable: number }) | undefined {
  if (spoolDir === undefined) return undefined;
  try {
    const spool = openAuditSpool(path.join(spoolDir, 'audit-spool'), source);
    if (!spool) log.warn({ source }, '[audit] another process of this data folder holds the audit spool; rows wait in memory only');
    return spool;
  } catch (error) {
    log.error({ err: error }, '[audit] the audit spool cannot be opened; rows wait in memory only');
    return undefined;
  }
}

/**
 * The producer every surface uses (design 4.6, 8.4). The row is built, redacted, capped and numbered at
 * once, so the caller may reuse its objects; one pump sends the rows to Redis in order
 * (`createProducerPump`). Nothing on a response path waits for Redis. While Redis is unreachable the rows
 * wait, and past `AUDIT_BUFFER_CAPACITY` new rows are dropped; while it answers, none is dropped for want
 * of room (`makeRoom`). With a spool, each row is also appended to a file first and kept (in the file and
 * in memory) until the writer has stored it, so neither a Redis that loses its data nor a crash of this
 * process loses it: after either, the rows not yet written are sent again, in order, and the writer skips
 * the ones it already has. Every loss is logged and counted in `audit_drops` (`createProducerDrops`).
 */
export function createAuditProducer({ redis, db, source = 'producer', settings, log, userId, spoolDir }: AuditProducerDeps): AuditProducer {
  const bufferCapacity = settings.AUDIT_BUFFER_CAPACITY ?? AUDIT_BUFFER_CAPACITY;
  const stats = { queued: 0, overflow: 0, failed: 0, invalid: 0 };
  let spool = db ? openSpool(spoolDir, source, log) : undefined;
  const drops = createProducerDrops({ db, source, log, spool: () => spool });
  const producerId = spool?.producerId ?? `${source}-${randomUUID()}`;
  const state: ProducerState = {
    held: spool ? [...spool.left] : [],
    sendFrom: 0,
    nextSeq: spool?.nextSeq ?? 1,
    evicted: spool?.evicted ?? 0,
    lastAccepted: undefined,
    rewinding: spool !== undefined,
    redisAway: false,
    refusedWhileAway: 0,
  };
  const pump = createProducerPump({
    redis,
    db,
    log,
    queueCapacity: settings.AUDIT_QUEUE_CAPACITY,
    bufferCapacity,
    producerId,
    state,
    spool: () => spool,
    drops,
    stats,
  });
  let spoolFailing = false;

  function enqueue(event: AuditEvent): Promise<EnqueueResult> {
    let built: ReturnType<typeof buildAuditRow>;
    let json: string;
    try {
      built = buildAuditRow(event, { userId });
      json = JSON.stringify(built.row);
    } catch (error) {
      stats.invalid += 1;
      drops.dropped('invalid', 1);
      log.error({ err: error, tool: (event as { tool?: unknown })?.tool }, '[audit] event rejected — dropped');
      return Promise.resolve('invalid');
    }
    if (built.discardedSector !== undefined) {
      log.warn({ tool: built.row.tool, sector: built.discardedSector }, '[audit] sector is not a sector name; stored as null');
    }
    if (!makeRoom(state, bufferCapacity, spool !== undefined, redisReachable(state, redis))) {
      stats.failed += 1;
      drops.dropped('bufferOverflow', 1);
      // One line when the buffer first fills, then a count when Redis returns: not one per row.
      if (state.refusedWhileAway === 0) log.error({ capacity: bufferCapacity, held: state.held.length }, AUDIT_BUFFER_FULL_LOG_LINE);
      state.refusedWhileAway += 1;
      return Promise.resolve('failed');
    }
    const entry = auditEntry(json, producerId, state.nextSeq);
    if (spool) {
      try {
        spool.append(entry);
        spoolFailing = false;
      } catch (error) {
        // Sending a row the spool does not have could let a later process reuse its number: dropped instead.
        stats.failed += 1;
        drops.dropped('spoolUnwritable', 1);
        if (!spoolFailing) log.error({ err: error }, '[audit] the audit spool does not take rows — dropping them');
        spoolFailing = true;
        return Promise.resolve('failed');
      }
    }
    const { promise, resolve } = Promise.withResolvers<EnqueueResult>();
    state.held.push({ seq: state.nextSeq, entry, tool: built.row.tool, requestId: built.row.requestId, settle: resolve });
    state.nextSeq += 1;
    pump.start();
    return promise;
  }

  async function drain({ timeoutMs = 5_000 }: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (unsent(state) > 0 && Date.now() < deadline) {
      await Promise.race([pump.running(), new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MS, timeoutMs)))]);
    }
    // Let a send in flight finish (it fails fast while Redis is away), then give up what is left.
    await pump.stop();
    const left = state.held.slice(state.sendFrom);
    if (spool) {
      if (left.length > 0) log.warn({ held: left.length }, '[audit] Redis still away at shutdown — rows kept in the audit spool for the next start');
      for (const row of left) settle(row, 'spooled');
      pump.compact();
    } else {
      state.held = [];
      if (left.length > 0) {
        stats.failed += left.length;
        drops.dropped('gaveUp', left.length);
        log.error({ dropped: left.length }, '[audit] Redis still away at shutdown — dropped the rows held');
        for (const row of left) settle(row, 'failed');
      }
    }
    drops.stop();
    await drops.persist();
    if (spool) {
      spool.close();
      spool = undefined;
      state.held = [];
      state.sendFrom = 0;
    }
  }

  if (state.held.length > 0) pump.start();

  return {
    record(event) {
      void enqueue(event);
    },
    enqueue,
    stats: () => ({ ...stats, buffered: unsent(state) }),
    drain,
  };
}
