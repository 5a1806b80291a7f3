import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import { AUDIT_DROP_REASONS, createDropLedger, type AuditDropReason } from './audit-drops.ts';
import { buildAuditRow } from './audit-fns.ts';
import { auditEntry, pushAuditEntries, readAuditProducerMark } from './audit-queue.ts';
import { openAuditSpool, type AuditSpool } from './audit-spool.ts';
import { AUDIT_LOG_LINES, type AuditEvent, type AuditRecorder } from './audit-types.ts';

/** Default of `AUDIT_BUFFER_CAPACITY`. */
export const AUDIT_BUFFER_CAPACITY = 50_000;
/** Rows sent to Redis in one script call. */
const PUSH_BATCH_SIZE = 500;
/** Pause between two tries while Redis is unreachable. */
const RETRY_MS = 200;
/** How often drop counts are moved into Postgres. */
const PERSIST_DROPS_MS = 1_000;
/** How often a producer with a spool asks which of its rows are written, while some are not. */
const WRITTEN_POLL_MS = 500;
/** Written rows the spool file may still hold before it is rewritten without them. */
const COMPACT_AFTER_ROWS = 2_000;

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

/** What became of one event (`spooled`: still in the spool when the producer stopped, sent at its next start). */
export type EnqueueResult = 'queued' | 'overflow' | 'failed' | 'invalid' | 'spooled';

/** Counted by this process since it started; the durable counts across processes are in `audit_drops`. */
export type AuditProducerStats = {
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

type Held = { seq: number; entry: string; tool?: string; requestId?: string; settle?: (result: EnqueueResult) => void };

const WrittenMarkSchema = z.object({ max_seq: z.number() });

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
 * once, so the caller may reuse its objects; one pump sends the rows to Redis in order, a batch per script
 * call. Nothing on a response path waits for Redis. While Redis is unreachable the rows wait; past
 * `AUDIT_BUFFER_CAPACITY` new rows are dropped. With a spool, each row is also appended to a file first
 * and kept (in the file and in memory) until the writer has stored it, so neither a Redis that loses its
 * data nor a crash of this process loses it: after either, the rows not yet written are sent again, in
 * order, and the writer skips the ones it already has. Every loss is logged and counted in `audit_drops`.
 */
export function createAuditProducer({ redis, db, source = 'producer', settings, log, userId, spoolDir }: AuditProducerDeps): AuditProducer {
  const bufferCapacity = settings.AUDIT_BUFFER_CAPACITY ?? AUDIT_BUFFER_CAPACITY;
  const stats = { queued: 0, overflow: 0, failed: 0, invalid: 0 };
  const drops = db ? createDropLedger({ db, source, log }) : undefined;
  let spool = db ? openSpool(spoolDir, source, log) : undefined;
  const producerId = spool?.producerId ?? `${source}-${randomUUID()}`;
  let nextSeq = spool?.nextSeq ?? 1;
  /** Highest number given up unwritten from a full spool: a resend claims nothing lost below it. */
  let evicted = spool?.evicted ?? 0;
  /** In number order. With a spool: rows before `sendFrom` are in Redis and not yet known written. */
  let held: Held[] = spool ? [...spool.left] : [];
  let sendFrom = 0;
  /** The last number Redis took from this producer; undefined until it took one. */
  let lastAccepted: number | undefined;
  /** Set at start and whenever Redis may have lost what it held: the next send resends every held row. */
  let rewinding = spool !== undefined;
  let writtenSinceCompact = 0;
  let lastChecked = performance.now();
  let pumping: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let redisAway = false;
  let stopPumping = false;
  let refusedWhileAway = 0;
  let spoolFailing = false;
  let persistTimer: NodeJS.Timeout | undefined;

  /** With a spool, the counts not yet in Postgres are also on disk: a kill before they are stored loses none. */
  function saveDrops(): void {
    if (!spool || !drops) return;
    try {
      const pending = Object.entries(drops.pending()) as Array<[AuditDropReason, number]>;
      spool.saveDrops(Object.fromEntries(pending.map(([key, rows]) => [AUDIT_DROP_REASONS[key], rows])));
    } catch (error) {
      log.error({ err: error }, '[audit] could not keep the audit drop counts beside the spool');
    }
  }

  async function persistDrops(): Promise<void> {
    await drops?.persist();
    saveDrops();
  }

  function dropped(reason: AuditDropReason, rows: number): void {
    if (!drops || rows === 0) return;
    drops.add(reason, rows);
    saveDrops();
    persistTimer ??= setTimeout(() => {
      persistTimer = undefined;
      void persistDrops();
    }, PERSIST_DROPS_MS).unref();
  }
  if (spool && drops) {
    // Counted by the process before this one, which stopped before Postgres took them.
    for (const [key, reason] of Object.entries(AUDIT_DROP_REASONS) as Array<[AuditDropReason, string]>) {
      const rows = spool.unstoredDrops[reason] ?? 0;
      if (rows > 0) dropped(key, rows);
    }
  }
  if (spool && spool.unreadable > 0) {
    log.error({ dropped: spool.unreadable }, '[audit] unreadable audit spool lines — dropped');
    dropped('unreadable', spool.unreadable);
  }

  /** The longest run of consecutive numbers from `sendFrom`, at most one batch. */
  function nextRun(): Held[] {
    const run = [held[sendFrom]!];
    while (run.length < PUSH_BATCH_SIZE) {
      const next = held[sendFrom + run.length];
      if (!next || next.seq !== run[run.length - 1]!.seq + 1) break;
      run.push(next);
    }
    return run;
  }

  function settle(row: Held, result: EnqueueResult): void {
    row.settle?.(result);
    row.settle = undefined;
  }

  function refuse(rows: Held[]): void {
    for (const row of rows) {
      if (!row.settle) continue;
      stats.overflow += 1;
      log.warn({ tool: row.tool, requestId: row.requestId, capacity: settings.AUDIT_QUEUE_CAPACITY }, AUDIT_LOG_LINES.queueOverflow);
      settle(row, 'overflow');
    }
    const resent = rows.filter((row) => !row.tool).length;
    // A resend Redis had no room for: rows it took once and then lost with its data.
    dropped('lostWithRedis', resent);
    dropped('queueOverflow', rows.length - resent);
    if (spool && rows.length > 0) {
      try {
        spool.refused(rows[0]!.seq, rows[rows.length - 1]!.seq);
      } catch (error) {
        log.error({ err: error }, '[audit] could not note refused rows in the audit spool');
      }
    }
    held.splice(held.indexOf(rows[0]!), rows.length);
  }

  async function sendBatch(): Promise<boolean> {
    const run = nextRun();
    const first = run[0]!.seq;
    const previous = rewinding ? evicted : (lastAccepted ?? 0);
    try {
      const answer = await pushAuditEntries(redis, {
        producerId,
        firstSeq: first,
        entries: run.map((row) => row.entry),
        capacity: settings.AUDIT_QUEUE_CAPACITY,
        expect: spool && !rewinding ? lastAccepted : undefined,
        after: previous === first - 1 ? undefined : previous,
      });
      if (redisAway) {
        redisAway = false;
        log.info({ stillHeld: held.length - sendFrom, droppedWhileAway: refusedWhileAway }, '[audit] Redis is back; sending the rows held');
        refusedWhileAway = 0;
      }
      if (answer.rewind) {
        log.warn({ producerId, from: held[0]?.seq }, '[audit] Redis no longer holds rows it took; sending every row not yet written again');
        sendFrom = 0;
        rewinding = true;
        return true;
      }
      rewinding = false;
      const taken = answer.already + answer.queued;
      for (const row of run.slice(0, taken)) {
        if (row.settle) stats.queued += 1;
        settle(row, 'queued');
        // A row kept only in memory is forgotten once Redis has it.
        if (spool) row.tool = row.requestId = undefined;
      }
      if (taken > 0) lastAccepted = run[taken - 1]!.seq;
      if (spool) sendFrom += taken;
      else held.splice(0, taken);
      if (taken < run.length) refuse(run.slice(taken));
      return true;
    } catch (error) {
      if (!redisAway) {
        redisAway = true;
        log.warn({ err: error, held: held.length, capacity: bufferCapacity }, '[audit] Redis unreachable; holding rows until it returns');
      }
      // Redis may come back without what it held.
      if (spool) {
        sendFrom = 0;
        rewinding = true;
      }
      return false;
    }
  }

  /** Forgets rows the writer has stored, and resends when Redis forgot rows it took. */
  async function checkWritten(): Promise<void> {
    if (!db || !spool) return;
    try {
      const marks = await db.query(sql.type(WrittenMarkSchema)`SELECT max_seq FROM audit_producer_marks WHERE producer_id = ${producerId}`);
      const mark = marks.rows[0]?.max_seq ?? 0;
      let written = 0;
      while (written < held.length && held[written]!.seq <= mark) written += 1;
      if (written > 0) {
        held = held.slice(written);
        sendFrom = Math.max(0, sendFrom - written);
        writtenSinceCompact += written;
      }
    } catch {
      // Postgres away: the rows stay held until it answers.
    }
    if (sendFrom > 0 && lastAccepted !== undefined) {
      const remembered = await readAuditProducerMark(redis, producerId).catch(() => undefined);
      if (remembered !== undefined && remembered < lastAccepted) {
        log.warn({ producerId }, '[audit] Redis lost rows it took; sending every row not yet written again');
        sendFrom = 0;
        rewinding = true;
      }
    }
    if (writtenSinceCompact >= COMPACT_AFTER_ROWS || (writtenSinceCompact > 0 && held.length === 0)) compact();
  }

  function compact(): void {
    try {
      spool?.compact({ nextSeq, evicted, entries: held });
      writtenSinceCompact = 0;
    } catch (error) {
      log.error({ err: error }, '[audit] could not rewrite the audit spool');
    }
  }

  function pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms).unref();
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });
  }

  async function pump(): Promise<void> {
    while (!stopPumping) {
      // On a clock, not only when idle: under a steady load there is always a row to send.
      if (spool && held.length > 0 && performance.now() - lastChecked >= WRITTEN_POLL_MS) {
        lastChecked = performance.now();
        await checkWritten();
      } else if (sendFrom < held.length) {
        if (!(await sendBatch())) await pause(RETRY_MS);
      } else if (spool && held.length > 0) {
        // Everything is in Redis: wait for the writer, unless a new row arrives first.
        await pause(WRITTEN_POLL_MS - (performance.now() - lastChecked));
      } else return;
    }
  }

  function startPump(): void {
    wake?.();
    pumping ??= pump().finally(() => {
      pumping = undefined;
      if (sendFrom < held.length && !stopPumping) startPump();
    });
  }

  /** Makes room in a full buffer by forgetting the oldest row Redis already has, when there is one. */
  function room(): boolean {
    if (held.length < bufferCapacity) return true;
    if (!spool || sendFrom === 0) return false;
    evicted = Math.max(evicted, held.shift()!.seq);
    sendFrom -= 1;
    return true;
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
    if (!room()) {
      stats.failed += 1;
      dropped('bufferOverflow', 1);
      // One line when the buffer first fills, then a count when Redis returns: not one per row.
      if (refusedWhileAway === 0) log.error({ capacity: bufferCapacity }, '[audit] buffer full while Redis is away — dropping new rows');
      refusedWhileAway += 1;
      return Promise.resolve('failed');
    }
    const entry = auditEntry(json, producerId, nextSeq);
    if (spool) {
      try {
        spool.append(entry);
        spoolFailing = false;
      } catch (error) {
        // Sending a row the spool does not have could let a later process reuse its number: dropped instead.
        stats.failed += 1;
        dropped('spoolUnwritable', 1);
        if (!spoolFailing) log.error({ err: error }, '[audit] the audit spool does not take rows — dropping them');
        spoolFailing = true;
        return Promise.resolve('failed');
      }
    }
    const { promise, resolve } = Promise.withResolvers<EnqueueResult>();
    held.push({ seq: nextSeq, entry, tool: built.row.tool, requestId: built.row.requestId, settle: resolve });
    nextSeq += 1;
    startPump();
    return promise;
  }

  async function drain({ timeoutMs = 5_000 }: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (sendFrom < held.length && Date.now() < deadline) {
      await Promise.race([pumping, new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MS, timeoutMs)))]);
    }
    // Let a send in flight finish (it fails fast while Redis is away), then give up what is left.
    stopPumping = true;
    wake?.();
    await pumping;
    stopPumping = false;
    const left = held.slice(sendFrom);
    if (spool) {
      if (left.length > 0) log.warn({ held: left.length }, '[audit] Redis still away at shutdown — rows kept in the audit spool for the next start');
      for (const row of left) settle(row, 'spooled');
      compact();
    } else {
      held = [];
      if (left.length > 0) {
        stats.failed += left.length;
        dropped('gaveUp', left.length);
        log.error({ dropped: left.length }, '[audit] Redis still away at shutdown — dropped the rows held');
        for (const row of left) settle(row, 'failed');
      }
    }
    clearTimeout(persistTimer);
    persistTimer = undefined;
    await persistDrops();
    if (spool) {
      spool.close();
      spool = undefined;
      held = [];
      sendFrom = 0;
    }
  }

  if (held.length > 0) startPump();

  return {
    record(event) {
      void enqueue(event);
    },
    enqueue,
    stats: () => ({ ...stats, buffered: held.length - sendFrom }),
    drain,
  };
}
