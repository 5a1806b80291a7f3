import {
  AUDIT_LOG_LINES,
  QueuedAuditRowSchema,
  countAuditDrops,
  insertAuditRows,
  takeAuditBatch,
  type QueuedAuditRow,
} from '@pcg/shared/audit';
import type { DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import type { Redis } from '@pcg/shared/redis';

/**
 * Rows taken per flush. One flush of 10,000 rows takes a small fraction of the default 1000 ms interval
 * (see `npm run bench:audit`), so one writer keeps up with 10,000 rows a second before it needs to
 * catch up; the statement has ten parameters whatever the size (one array per column). The bound keeps
 * what a single failure can lose, and the memory one flush holds (at most ~45 MB with every row at the
 * 4 KB args cap, a few MB for ordinary rows), small.
 */
export const AUDIT_FLUSH_BATCH_SIZE = 10_000;

export type AuditWriterDeps = {
  db: DatabasePool;
  /** A `commands` client under REDIS_PREFIX. */
  redis: Redis;
  log: Logger;
  /** `AUDIT_FLUSH_MS`. */
  flushMs: number;
  /** Default `AUDIT_FLUSH_BATCH_SIZE`. */
  batchSize?: number;
  /** How long `close()` may keep draining the queue; default 10000 ms (the launcher's grace is 25 s). */
  closeDrainMs?: number;
};

export type FlushResult = {
  /** Entries popped from the queue. */
  taken: number;
  written: number;
  /** Popped and lost: the whole batch when its INSERT failed, plus unreadable entries. */
  dropped: number;
};

export type AuditWriterStats = { flushes: number; written: number; dropped: number };

function readEntry(entry: string): QueuedAuditRow | null {
  try {
    const parsed = QueuedAuditRowSchema.safeParse(JSON.parse(entry));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Drains the audit queue into `audit_log` (design 4.6). Each flush pops up to a batch with one atomic
 * LPOP and writes it with one INSERT. Delivery is at most once: a popped row is never pushed back, so
 * a failed INSERT loses that batch (logged, counted in Redis) and nothing is ever written twice. Flushes
 * never overlap. A full batch means a backlog, so the next flush starts at once instead of waiting.
 */
export function createAuditWriter(deps: AuditWriterDeps) {
  const { db, redis, log, flushMs } = deps;
  const batchSize = deps.batchSize ?? AUDIT_FLUSH_BATCH_SIZE;
  const stats: AuditWriterStats = { flushes: 0, written: 0, dropped: 0 };
  let chain: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function countDrops(reason: 'flushFailed' | 'unreadable', rows: number): Promise<void> {
    stats.dropped += rows;
    await countAuditDrops(redis, reason, rows).catch((error: unknown) =>
      log.warn({ err: error, reason, rows }, '[audit] could not count dropped rows'),
    );
  }

  async function flushOnce(): Promise<FlushResult> {
    let entries: string[];
    try {
      entries = await takeAuditBatch(redis, batchSize);
    } catch (error) {
      // Nothing was taken, so nothing is lost: the rows wait in Redis for the next flush.
      log.warn({ err: error }, '[audit] queue unreachable, will try again');
      return { taken: 0, written: 0, dropped: 0 };
    }
    if (entries.length === 0) return { taken: 0, written: 0, dropped: 0 };
    stats.flushes += 1;
    const rows: QueuedAuditRow[] = [];
    for (const entry of entries) {
      const row = readEntry(entry);
      if (row) rows.push(row);
    }
    const unreadable = entries.length - rows.length;
    if (unreadable > 0) {
      log.error({ dropped: unreadable }, '[audit] unreadable queue entries — dropped');
      await countDrops('unreadable', unreadable);
    }
    try {
      const written = await insertAuditRows(db, rows);
      stats.written += written;
      return { taken: entries.length, written, dropped: unreadable };
    } catch (error) {
      log.error({ err: error, dropped: rows.length }, `${AUDIT_LOG_LINES.flushFailed} ${rows.length}`);
      await countDrops('flushFailed', rows.length);
      return { taken: entries.length, written: 0, dropped: unreadable + rows.length };
    }
  }

  /** One flush now, after any flush in progress. Never rejects. */
  function flush(): Promise<FlushResult> {
    const next = chain.then(() => flushOnce());
    chain = next;
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
    /** Starts the loop: the first flush runs one interval from now. */
    start(): void {
      stopped = false;
      schedule(flushMs);
    },
    /**
     * Stops the loop, lets a flush in progress finish, then writes what is still queued (batch by batch,
     * for at most `closeDrainMs`), so rows recorded just before a SIGTERM are not left waiting.
     */
    async close(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      const deadline = performance.now() + (deps.closeDrainMs ?? 10_000);
      let result: FlushResult;
      do {
        result = await flush();
      } while (result.taken >= batchSize && performance.now() < deadline);
    },
  };
}

export type AuditWriter = ReturnType<typeof createAuditWriter>;
