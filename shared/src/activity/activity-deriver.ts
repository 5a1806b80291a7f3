import type { DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import { ACTIVITY_BATCH_SIZE, rollUpActivityOnce } from './activity-rollup.ts';
import { raiseConnectionAlerts } from './connection-alerts.ts';
import { createPeriodicPass } from './periodic-pass.ts';

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
  async function pass(stopped: () => boolean): Promise<number> {
    let counted = 0;
    for (;;) {
      const batch = await rollUpActivityOnce(db, batchSize);
      counted += batch.rows;
      if (!batch.ran || batch.rows < batchSize || stopped()) break;
    }
    await raiseConnectionAlerts(db);
    return counted;
  }

  return createPeriodicPass({ pass, everyMs, log, failedText: '[activity] pass failed, will try again' });
}

export type ActivityDeriver = ReturnType<typeof createActivityDeriver>;
