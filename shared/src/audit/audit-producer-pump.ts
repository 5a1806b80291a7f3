import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import type { ProducerDrops } from './audit-producer-drops.ts';
import { settle, unsent, type HeldRow, type ProducerState } from './audit-producer-state.ts';
import { pushAuditEntries, readAuditProducerMark } from './audit-queue.ts';
import type { AuditSpool } from './audit-spool.ts';
import { AUDIT_LOG_LINES } from './audit-types.ts';

/** Rows sent to Redis in one script call. */
const PUSH_BATCH_SIZE = 500;
/** Rows in one script call while a burst waits (issue 44): fewer round trips, so a burst drains quickly. */
const BURST_PUSH_BATCH_SIZE = 5_000;
/** Pause between two tries while Redis is unreachable. */
export const RETRY_MS = 200;
/** How often a producer with a spool asks which of its rows are written, while some are not. */
const WRITTEN_POLL_MS = 500;
/** Written rows the spool file may still hold before it is rewritten without them. */
const COMPACT_AFTER_ROWS = 2_000;

const WrittenMarkSchema = z.object({ max_seq: z.number() });

export type PumpDeps = {
  redis: Redis;
  db?: Pick<DatabasePool, 'query'> | undefined;
  log: Logger;
  queueCapacity: number;
  bufferCapacity: number;
  producerId: string;
  state: ProducerState;
  spool: () => AuditSpool | undefined;
  drops: ProducerDrops;
  stats: { queued: number; overflow: number };
};

export type Pump = {
  /** Wakes the pump, or starts it, to send what is held. */
  start(): void;
  /** The pump's current run, if any. */
  running(): Promise<void> | undefined;
  /** Lets a send in flight finish, then stops the pump (it can be started again). */
  stop(): Promise<void>;
  /** Rewrites the spool with only the rows not yet known written. */
  compact(): void;
};

/**
 * The one pump that sends a producer's rows to Redis in order, a run of consecutive numbers per script call,
 * retrying while Redis is unreachable; with a spool it also learns which rows the writer has stored (they
 * are forgotten) and resends every held row when Redis lost what it took (design 8.4).
 */
export function createProducerPump(deps: PumpDeps): Pump {
  const { redis, db, log, state, spool, drops, stats } = deps;
  let writtenSinceCompact = 0;
  let lastChecked = performance.now();
  let pumping: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let stopping = false;

  /** The longest run of consecutive numbers from `sendFrom`, at most one batch (a larger one under a burst). */
  function nextRun(): HeldRow[] {
    const limit = unsent(state) >= BURST_PUSH_BATCH_SIZE ? BURST_PUSH_BATCH_SIZE : PUSH_BATCH_SIZE;
    const run = [state.held[state.sendFrom]!];
    while (run.length < limit) {
      const next = state.held[state.sendFrom + run.length];
      if (!next || next.seq !== run[run.length - 1]!.seq + 1) break;
      run.push(next);
    }
    return run;
  }

  /** Rows the full queue refused (spec 8: dropped, logged, never sent again). */
  function refuse(rows: HeldRow[]): void {
    for (const row of rows) {
      if (!row.settle) continue;
      stats.overflow += 1;
      log.warn({ tool: row.tool, requestId: row.requestId, capacity: deps.queueCapacity }, AUDIT_LOG_LINES.queueOverflow);
      settle(row, 'overflow');
    }
    const resent = rows.filter((row) => !row.tool).length;
    // A resend Redis had no room for: rows it took once and then lost with its data.
    drops.dropped('lostWithRedis', resent);
    drops.dropped('queueOverflow', rows.length - resent);
    const open = spool();
    if (open && rows.length > 0) {
      try {
        open.refused(rows[0]!.seq, rows[rows.length - 1]!.seq);
      } catch (error) {
        log.error({ err: error }, '[audit] could not note refused rows in the audit spool');
      }
    }
    state.held.splice(state.held.indexOf(rows[0]!), rows.length);
  }

  async function sendBatch(): Promise<boolean> {
    const run = nextRun();
    const first = run[0]!.seq;
    const previous = state.rewinding ? state.evicted : (state.lastAccepted ?? 0);
    const spooling = spool() !== undefined;
    try {
      const answer = await pushAuditEntries(redis, {
        producerId: deps.producerId,
        firstSeq: first,
        entries: run.map((row) => row.entry),
        capacity: deps.queueCapacity,
        expect: spooling && !state.rewinding ? state.lastAccepted : undefined,
        after: previous === first - 1 ? undefined : previous,
      });
      if (state.redisAway) {
        state.redisAway = false;
        log.info({ stillHeld: unsent(state), droppedWhileAway: state.refusedWhileAway }, '[audit] Redis is back; sending the rows held');
        state.refusedWhileAway = 0;
      }
      if (answer.rewind) {
        log.warn({ producerId: deps.producerId, from: state.held[0]?.seq }, '[audit] Redis no longer holds rows it took; sending every row not yet written again');
        state.sendFrom = 0;
        state.rewinding = true;
        return true;
      }
      state.rewinding = false;
      const taken = answer.already + answer.queued;
      for (const row of run.slice(0, taken)) {
        if (row.settle) stats.queued += 1;
        settle(row, 'queued');
        // A row kept only in memory is forgotten once Redis has it.
        if (spooling) row.tool = row.requestId = undefined;
      }
      if (taken > 0) state.lastAccepted = run[taken - 1]!.seq;
      if (spooling) state.sendFrom += taken;
      else state.held.splice(0, taken);
      if (taken < run.length) refuse(run.slice(taken));
      return true;
    } catch (error) {
      if (!state.redisAway) {
        state.redisAway = true;
        log.warn({ err: error, held: state.held.length, capacity: deps.bufferCapacity }, '[audit] Redis unreachable; holding rows until it returns');
      }
      // Redis may come back without what it held.
      if (spooling) {
        state.sendFrom = 0;
        state.rewinding = true;
      }
      return false;
    }
  }

  /** Forgets rows the writer has stored, and resends when Redis forgot rows it took. */
  async function checkWritten(): Promise<void> {
    if (!db || !spool()) return;
    try {
      const marks = await db.query(sql.type(WrittenMarkSchema)`SELECT max_seq FROM audit_producer_marks WHERE producer_id = ${deps.producerId}`);
      const mark = marks.rows[0]?.max_seq ?? 0;
      let written = 0;
      while (written < state.held.length && state.held[written]!.seq <= mark) written += 1;
      if (written > 0) {
        state.held = state.held.slice(written);
        state.sendFrom = Math.max(0, state.sendFrom - written);
        writtenSinceCompact += written;
      }
    } catch {
      // Postgres away: the rows stay held until it answers.
    }
    if (state.sendFrom > 0 && state.lastAccepted !== undefined) {
      const remembered = await readAuditProducerMark(redis, deps.producerId).catch(() => undefined);
      if (remembered !== undefined && remembered < state.lastAccepted) {
        log.warn({ producerId: deps.producerId }, '[audit] Redis lost rows it took; sending every row not yet written again');
        state.sendFrom = 0;
        state.rewinding = true;
      }
    }
    if (writtenSinceCompact >= COMPACT_AFTER_ROWS || (writtenSinceCompact > 0 && state.held.length === 0)) compact();
  }

  function compact(): void {
    try {
      spool()?.compact({ nextSeq: state.nextSeq, evicted: state.evicted, entries: state.held });
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
    while (!stopping) {
      const spooling = spool() !== undefined;
      // On a clock, not only when idle: under a steady load there is always a row to send.
      if (spooling && state.held.length > 0 && performance.now() - lastChecked >= WRITTEN_POLL_MS) {
        lastChecked = performance.now();
        await checkWritten();
      } else if (state.sendFrom < state.held.length) {
        if (!(await sendBatch())) await pause(RETRY_MS);
      } else if (spooling && state.held.length > 0) {
        // Everything is in Redis: wait for the writer, unless a new row arrives first.
        await pause(WRITTEN_POLL_MS - (performance.now() - lastChecked));
      } else return;
    }
  }

  function start(): void {
    wake?.();
    pumping ??= pump().finally(() => {
      pumping = undefined;
      if (state.sendFrom < state.held.length && !stopping) start();
    });
  }

  return {
    start,
    running: () => pumping,
    async stop() {
      stopping = true;
      wake?.();
      await pumping;
      stopping = false;
    },
    compact,
  };
}
