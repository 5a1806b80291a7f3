import {
  AUDIT_LOG_LINES,
  QueuedAuditEntrySchema,
  addAuditDrops,
  copyChainedAuditRows,
  createCanonicalArgsHelper,
  createDropLedger,
  statementsOn,
  takeAuditBatch,
  type ChainHead,
  type QueuedAuditEntry,
} from '@pcg/shared/audit';
import { sql, type DatabasePool, type DirectPool } from '@pcg/shared/db';
import { unreachableStore } from '@pcg/shared/http';
import type { Logger } from '@pcg/shared/logger';
import type { Redis } from '@pcg/shared/redis';
import type { PoolClient } from 'pg';
import { z } from 'zod';
import { createSequenceMarks, storeSequenceMarks } from './sequence-marks.ts';

/** The source the writer's drop counts are filed under in `audit_drops`. */
export const AUDIT_WRITER_SOURCE = 'audit-writer';

/**
 * Rows taken per flush. One flush of 10,000 rows takes a small fraction of the default 1000 ms interval
 * (see `npm run bench:audit`), so one writer keeps up with 10,000 rows a second before it needs to
 * catch up; the statement has ten parameters whatever the size (one array per column). The bound keeps
 * what a single failure can lose, and the memory a flush holds with the batch read ahead beside it (at
 * most ~90 MB with every row at the 4 KB args cap, a few MB for ordinary rows), small.
 */
export const AUDIT_FLUSH_BATCH_SIZE = 10_000;

export type AuditWriterDeps = {
  db: DatabasePool;
  /** The same database's direct pool: each flush's transaction runs on one of its clients, for the COPY. */
  direct: Pick<DirectPool, 'connect'>;
  /** A `commands` client under REDIS_PREFIX. */
  redis: Redis;
  log: Logger;
  /** `AUDIT_FLUSH_MS`. */
  flushMs: number;
  /** Default `AUDIT_FLUSH_BATCH_SIZE`. */
  batchSize?: number;
  /** How long `close()` may keep draining the queue; default 10000 ms (the launcher's grace is 25 s). */
  closeDrainMs?: number;
  /** Each producer's last accounted sequence number (`loadSequenceMarks`); default none. */
  marks?: Map<string, number>;
  /** The chain key (`loadAuditChainKey`) each row's link is keyed with; null: the old unkeyed link (tests only). */
  chainKey?: Buffer | null;
};

export type FlushResult = {
  /** Entries popped from the queue. */
  taken: number;
  written: number;
  /** Popped and lost: the whole batch when its INSERT failed, plus unreadable entries. */
  dropped: number;
};

export type AuditWriterStats = { flushes: number; written: number; dropped: number };

function readEntry(entry: string): QueuedAuditEntry | null {
  try {
    const parsed = QueuedAuditEntrySchema.safeParse(JSON.parse(entry));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** A batch taken from the queue: how many entries were popped and those that could be read; or Redis's failure (nothing popped). */
type TakenBatch = { taken: number; read: QueuedAuditEntry[] } | { unreachable: unknown };

function readBatch(entries: readonly string[]): TakenBatch {
  const read: QueuedAuditEntry[] = [];
  for (const entry of entries) {
    const row = readEntry(entry);
    if (row) read.push(row);
  }
  return { taken: entries.length, read };
}

/**
 * Drains the audit queue into `audit_log` (design 4.6). Each flush pops up to a batch with one atomic
 * LPOP and writes it with one statement, a binary COPY (issue 44). Delivery is at most once: a popped row is never pushed back, so
 * a failed INSERT loses that batch (logged and counted) and nothing is ever written twice. Every loss is
 * counted in `audit_drops` in the same transaction as the rows (or, while Postgres is away, kept until it
 * returns): unreadable entries, failed flushes, and rows lost with Redis's data, found as gaps in the
 * producers' sequence numbers. Once a flush failed because Postgres did not answer, no row is taken out of
 * Redis until Postgres answers again, so an outage loses at most the batch in flight. Flushes never overlap. A full batch means a backlog, so the next flush
 * starts at once instead of waiting, and the loop takes and reads that next batch while this one is
 * written (a batch so read ahead is written next, or held until Postgres answers; never dropped for the
 * failure of the one before). Each row is chained to the one before (`copyChainedAuditRows`).
 */
export function createAuditWriter(deps: AuditWriterDeps) {
  const { db, redis, log, flushMs } = deps;
  const batchSize = deps.batchSize ?? AUDIT_FLUSH_BATCH_SIZE;
  const stats: AuditWriterStats = { flushes: 0, written: 0, dropped: 0 };
  const drops = createDropLedger({ db, source: AUDIT_WRITER_SOURCE, log });
  const marks = createSequenceMarks(deps.marks ?? new Map());
  const canonical = createCanonicalArgsHelper();
  let queue: Promise<unknown> = Promise.resolve();
  /** The chain's head as this writer last committed it; null until its first write. */
  let head: ChainHead | null = null;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** Between `start()` and `close()`: only the loop reads ahead, so a single `flush()` takes one batch. */
  let running = false;
  /**
   * The next batch, taken while a full one is written. It is written by the next flush, after the batch
   * before it; if that one failed because Postgres did not answer, it waits here (not in Redis) until
   * Postgres answers, and it is the only batch so held.
   */
  let ahead: Promise<TakenBatch> | null = null;
  /** Set when a flush failed because Postgres did not answer; rows stay in Redis until it answers again. */
  let postgresAway = false;

  async function postgresAnswers(): Promise<boolean> {
    try {
      await db.oneFirst(sql.type(z.object({ ok: z.number() }))`SELECT 1::int AS ok`);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Writes the rows with what is to be accounted for, in one transaction on a plain pg connection (the
   * rows go in with one COPY, which slonik cannot send); on failure nothing is counted as stored. The
   * rows' canonical args are started before the transaction (on a helper thread for a large batch), so
   * the chain's head is locked only while the rows are linked and sent.
   */
  async function commit(rows: readonly QueuedAuditEntry[]): Promise<number> {
    const counts = drops.take();
    const unsaved = marks.unsaved();
    let client: PoolClient | undefined;
    let broken: Error | undefined;
    try {
      const canonicalArgs = canonical.chunks(rows);
      client = await deps.direct.connect();
      const tx = statementsOn(client);
      await client.query('BEGIN');
      const chained = rows.length > 0 ? await copyChainedAuditRows(client, rows, canonicalArgs, { key: deps.chainKey ?? null }) : null;
      await storeSequenceMarks(tx, unsaved);
      await addAuditDrops(tx, AUDIT_WRITER_SOURCE, counts);
      await client.query('COMMIT');
      marks.saved(unsaved);
      if (chained) head = chained.head;
      return chained?.written ?? 0;
    } catch (error) {
      // A connection left mid-COPY or mid-transaction is closed, not reused: the server rolls back.
      broken = error instanceof Error ? error : new Error(String(error));
      drops.giveBack(counts);
      throw error;
    } finally {
      client?.release(broken);
    }
  }

  /** Takes the next batch and reads it (parsed and checked, before any lock). Never rejects. */
  function takeBatch(): Promise<TakenBatch> {
    return takeAuditBatch(redis, batchSize).then(readBatch, (error: unknown) => ({ unreachable: error }));
  }

  async function flushOnce(): Promise<FlushResult> {
    if (postgresAway) {
      if (!(await postgresAnswers())) return { taken: 0, written: 0, dropped: 0 };
      postgresAway = false;
      log.info('[audit] Postgres answers again; taking rows from the queue');
    }
    const batch = await (ahead ?? takeBatch());
    ahead = null;
    if ('unreachable' in batch) {
      // Nothing was taken, so nothing is lost: the rows wait in Redis for the next flush.
      log.warn({ err: batch.unreachable }, '[audit] queue unreachable, will try again');
      return { taken: 0, written: 0, dropped: 0 };
    }
    const { taken, read } = batch;
    if (taken === 0) {
      // Counts kept while Postgres was away go in now, even with no rows to write.
      if (marks.unsaved().length > 0 || Object.values(drops.pending()).some((rows) => rows > 0)) await commit([]).catch(() => undefined);
      return { taken: 0, written: 0, dropped: 0 };
    }
    // A full batch in the running loop means a backlog: the next batch is taken and read while this one is
    // written (issue 44), so Redis's answer and the parsing overlap Postgres's work instead of following it.
    if (running && taken >= batchSize) ahead = takeBatch();
    stats.flushes += 1;
    const unreadable = taken - read.length;
    if (unreadable > 0) {
      log.error({ dropped: unreadable }, '[audit] unreadable queue entries — dropped');
      stats.dropped += unreadable;
      drops.add('unreadable', unreadable);
    }
    const { lost, fresh: rows } = marks.note(read);
    if (lost > 0) {
      log.error({ dropped: lost }, '[audit] rows lost with Redis data — dropped');
      drops.add('lostWithRedis', lost);
    }
    try {
      const written = await commit(rows);
      stats.written += written;
      return { taken, written, dropped: unreadable };
    } catch (error) {
      log.error({ err: error, dropped: rows.length }, `${AUDIT_LOG_LINES.flushFailed} ${rows.length}`);
      stats.dropped += rows.length;
      drops.add('flushFailed', rows.length);
      if (unreachableStore(error) === 'postgres') {
        postgresAway = true;
        log.warn('[audit] Postgres does not answer; rows wait in the queue until it does');
      }
      // The INSERT may have failed on its own (Postgres up): then the count can go in now.
      await drops.persist();
      return { taken, written: 0, dropped: unreadable + rows.length };
    }
  }

  /**
   * At close, a batch still read ahead is already out of Redis, so it is written even past the drain's
   * deadline. When Postgres does not answer, it cannot be: it is logged, and counted when the writer
   * starts again, as the gap it leaves in its producers' sequence numbers (counting it now as well would
   * count it twice, since the marks that would tell the next start cannot be stored either).
   */
  async function writeHeldBatch(): Promise<void> {
    if (ahead) await flush();
    const held = ahead && (await ahead);
    ahead = null;
    if (held && !('unreachable' in held) && held.taken > 0) {
      log.error({ unwritten: held.taken }, '[audit] Postgres does not answer at close: rows read ahead are not written and will be counted as lost');
    }
  }

  /** One flush now, after any flush in progress. Never rejects. */
  function flush(): Promise<FlushResult> {
    const next = queue.then(() => flushOnce());
    queue = next;
    return next;
  }

  function schedule(delayMs: number): void {
    if (stopped) return;
    timer = setTimeout(() => void tick(), delayMs);
  }

  async function tick(): Promise<void> {
    const started = performance.now();
    const result = await flush();
    schedule(result.taken >= batchSize ? 0 : Math.max(0, flushMs - (performance.now() - started)));
  }

  return {
    flush,
    stats: (): AuditWriterStats => ({ ...stats }),
    /** The chain's head as this writer last committed it (null before its first write), for the anchor. */
    head: (): ChainHead | null => head,
    /** Starts the loop: the first flush runs one interval from now. */
    start(): void {
      stopped = false;
      running = true;
      schedule(flushMs);
    },
    /**
     * Stops the loop, lets a flush in progress finish, then writes what is still queued (batch by batch,
     * for at most `closeDrainMs`), so rows recorded just before a SIGTERM are not left waiting.
     */
    async close(): Promise<void> {
      stopped = true;
      running = false;
      clearTimeout(timer);
      const deadline = performance.now() + (deps.closeDrainMs ?? 10_000);
      let result: FlushResult;
      do {
        result = await flush();
      } while (result.taken >= batchSize && performance.now() < deadline);
      await writeHeldBatch();
      await canonical.close();
    },
  };
}

export type AuditWriter = ReturnType<typeof createAuditWriter>;
