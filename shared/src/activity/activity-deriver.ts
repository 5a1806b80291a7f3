import type { DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import { ACTIVITY_BATCH_SIZE, rollUpActivityOnce } from './activity-rollup.ts';
import { raiseConnectionAlerts } from './connection-alerts.ts';

/** How often the audit-writer counts new audit rows and looks at connection status. */
export const ACTIVITY_DERIVE_MS = 5_000;

export type ActivityDeriverDeps = {
  db: DatabasePool;
  log: Logger;
  everyMs?: number;
  batchSize?: number;
};

/**
 * The rollup and the alerts (design 8.5), run by the audit-writer on its own timer, apart from its flushes:
 * each pass counts every audit row committed since the last (as many batches as it takes; the first pass is
 * the backfill of every existing row) and then compares connection status. Passes never overlap.
 */
export function createActivityDeriver({ db, log, everyMs = ACTIVITY_DERIVE_MS, batchSize = ACTIVITY_BATCH_SIZE }: ActivityDeriverDeps) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;

  async function pass(): Promise<number> {
    let counted = 0;
    for (;;) {
      const batch = await rollUpActivityOnce(db, batchSize);
      counted += batch.rows;
      if (!batch.ran || batch.rows < batchSize || stopped) break;
    }
    await raiseConnectionAlerts(db);
    return counted;
  }

  /** Runs one pass now (or joins the one running); resolves with the rows counted. */
  function runOnce(): Promise<number> {
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      runOnce()
        .catch((error: unknown) => log.warn({ err: error }, '[activity] pass failed, will try again'))
        .finally(schedule);
    }, everyMs);
    timer.unref();
  }

  return {
    runOnce,
    start(): void {
      stopped = false;
      runOnce()
        .catch((error: unknown) => log.warn({ err: error }, '[activity] first pass failed, will try again'))
        .finally(schedule);
    },
    async close(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}

export type ActivityDeriver = ReturnType<typeof createActivityDeriver>;
