import { z } from 'zod';
import { sql, type DatabasePool } from '@pcg/shared/db';

type Entry = { producer?: string | undefined; seq?: number | undefined; after?: number | undefined };

const MarkRowSchema = z.object({ producer_id: z.string(), max_seq: z.number() });

/** Every producer's mark, read once when the writer starts (one row per spool, and one per start of a producer without one). */
export async function loadSequenceMarks(db: Pick<DatabasePool, 'any'>): Promise<Map<string, number>> {
  const rows = await db.any(sql.type(MarkRowSchema)`SELECT producer_id, max_seq FROM audit_producer_marks`);
  return new Map(rows.map((row) => [row.producer_id, row.max_seq]));
}

/**
 * The writer's view of each producer's sequence: the enqueue script numbers a producer's rows 1, 2, 3…
 * as Redis takes them, and the queue keeps their order, so a number past the next expected one means the
 * rows between were in Redis when it lost its data, and a number already seen is a row queued twice
 * (a resend whose first answer was lost, in a Redis that restarted meanwhile, or a producer sending again
 * what its spool kept), skipped. An entry's `after` says which numbers before it were ever taken by Redis:
 * those between `after` and `seq` were refused (counted by the producer) and are not lost. Exact with one writer.
 */
export function createSequenceMarks(initial: Map<string, number>) {
  const marks = new Map(initial);
  const dirty = new Map<string, number>();
  return {
    /** Notes a batch in queue order: how many rows were lost before them, and which entries are repeats. */
    note<E extends Entry>(entries: readonly E[]): { lost: number; fresh: E[] } {
      let lost = 0;
      const fresh: E[] = [];
      for (const entry of entries) {
        if (entry.producer === undefined || entry.seq === undefined) {
          fresh.push(entry);
          continue;
        }
        const mark = marks.get(entry.producer) ?? 0;
        if (entry.seq <= mark) continue;
        lost += Math.max(0, Math.min(entry.after ?? entry.seq - 1, entry.seq - 1) - mark);
        marks.set(entry.producer, entry.seq);
        dirty.set(entry.producer, entry.seq);
        fresh.push(entry);
      }
      return { lost, fresh };
    },
    /** Marks not yet stored. */
    unsaved: (): Array<[string, number]> => [...dirty],
    /** The marks given were stored; forget them unless they moved on since. */
    saved(stored: Array<[string, number]>): void {
      for (const [producer, seq] of stored) if (dirty.get(producer) === seq) dirty.delete(producer);
    },
  };
}

export async function storeSequenceMarks(db: Pick<DatabasePool, 'query'>, marks: Array<[string, number]>): Promise<void> {
  if (marks.length === 0) return;
  await db.query(sql.unsafe`
    INSERT INTO audit_producer_marks (producer_id, max_seq)
    SELECT * FROM unnest(${sql.array(marks.map(([producer]) => producer), 'text')}::text[], ${sql.array(marks.map(([, seq]) => seq), 'int8')}::int8[])
    ON CONFLICT (producer_id) DO UPDATE SET max_seq = GREATEST(audit_producer_marks.max_seq, EXCLUDED.max_seq), updated_at = now()`);
}
