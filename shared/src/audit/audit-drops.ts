import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';

/** Why audit rows were lost; each is a counter of `audit_drops`. */
export const AUDIT_DROP_REASONS = {
  /** Refused by the enqueue script because the Redis queue held `AUDIT_QUEUE_CAPACITY` rows (spec 8). */
  queueOverflow: 'queue_overflow',
  /** Redis was away so long that the producer's in-process buffer filled up. */
  bufferOverflow: 'buffer_overflow',
  /** Still held by a producer that stopped while Redis was away. */
  gaveUp: 'gave_up',
  /** Events that broke the audit event contract (a bug in the surface that reported them). */
  invalid: 'invalid',
  /** Taken by the writer and lost because their INSERT failed (spec 8). */
  flushFailed: 'flush_failed',
  /** Queue entries the writer could not read. */
  unreadable: 'unreadable',
  /** In the Redis queue when Redis lost its data (found as gaps in the producers' sequence numbers). */
  lostWithRedis: 'lost_with_redis',
  /** The producer could not append them to its audit spool (disk full or unwritable), so never sent them. */
  spoolUnwritable: 'spool_unwritable',
} as const;

export type AuditDropReason = keyof typeof AUDIT_DROP_REASONS;
export type AuditDropCounts = Record<AuditDropReason, number>;

export const emptyDropCounts = (): AuditDropCounts => ({
  queueOverflow: 0,
  bufferOverflow: 0,
  gaveUp: 0,
  invalid: 0,
  flushFailed: 0,
  unreadable: 0,
  lostWithRedis: 0,
  spoolUnwritable: 0,
});

type Queryable = Pick<DatabasePool, 'query'>;

/** Adds the counts to `audit_drops` in one statement (a counter row per source and reason). */
export async function addAuditDrops(db: Queryable, source: string, counts: Partial<AuditDropCounts>): Promise<void> {
  const entries = Object.entries(counts).filter(([, rows]) => (rows ?? 0) > 0) as Array<[AuditDropReason, number]>;
  if (entries.length === 0) return;
  await db.query(sql.unsafe`
    INSERT INTO audit_drops (source, reason, rows)
    SELECT ${source}, reason, rows
    FROM unnest(${sql.array(entries.map(([reason]) => AUDIT_DROP_REASONS[reason]), 'text')}::text[],
                ${sql.array(entries.map(([, rows]) => rows), 'int8')}::int8[]) AS d(reason, rows)
    ON CONFLICT (source, reason) DO UPDATE SET rows = audit_drops.rows + EXCLUDED.rows, updated_at = now()`);
}

const DropRowSchema = z.object({ reason: z.string(), rows: z.number() });

/** Every row lost since the database was created, by reason, across all processes. */
export async function readAuditDrops(db: Pick<DatabasePool, 'any'>): Promise<AuditDropCounts> {
  const rows = await db.any(sql.type(DropRowSchema)`SELECT reason, sum(rows)::int8 AS rows FROM audit_drops GROUP BY reason`);
  const counts = emptyDropCounts();
  for (const [key, reason] of Object.entries(AUDIT_DROP_REASONS) as Array<[AuditDropReason, string]>) {
    counts[key] = rows.find((row) => row.reason === reason)?.rows ?? 0;
  }
  return counts;
}

/**
 * Counts kept in memory until Postgres takes them: `add` never fails, `persist` moves what is pending into
 * `audit_drops` and keeps it pending when Postgres is away, so a count is lost only with the process.
 */
export function createDropLedger({ db, source, log }: { db: Queryable; source: string; log: Logger }) {
  let pending = emptyDropCounts();
  let persisting: Promise<void> | undefined;

  async function persistOnce(): Promise<void> {
    const taken = pending;
    if (Object.values(taken).every((rows) => rows === 0)) return;
    pending = emptyDropCounts();
    try {
      await addAuditDrops(db, source, taken);
    } catch (error) {
      for (const key of Object.keys(taken) as AuditDropReason[]) pending[key] += taken[key];
      log.warn({ err: error, pending }, '[audit] could not store the drop counts; keeping them to try again');
    }
  }

  return {
    add(reason: AuditDropReason, rows: number): void {
      pending[reason] += rows;
    },
    pending: (): AuditDropCounts => ({ ...pending }),
    /** Takes what is pending, for a caller that stores it in its own transaction (`giveBack` if that fails). */
    take(): AuditDropCounts {
      const taken = pending;
      pending = emptyDropCounts();
      return taken;
    },
    giveBack(counts: AuditDropCounts): void {
      for (const key of Object.keys(counts) as AuditDropReason[]) pending[key] += counts[key];
    },
    /** Stores what is pending; never rejects. Calls never overlap. */
    persist(): Promise<void> {
      persisting = (persisting ?? Promise.resolve()).then(persistOnce);
      return persisting;
    },
  };
}

export type DropLedger = ReturnType<typeof createDropLedger>;
