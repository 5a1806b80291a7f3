import type { DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import { AUDIT_DROP_REASONS, createDropLedger, type AuditDropReason } from './audit-drops.ts';
import type { AuditSpool } from './audit-spool.ts';

/** How often drop counts are moved into Postgres. */
const PERSIST_DROPS_MS = 1_000;

export type ProducerDrops = {
  /** Counts a loss: kept beside the spool at once, moved into `audit_drops` within a second. */
  dropped(reason: AuditDropReason, rows: number): void;
  /** Moves the counts into Postgres now (and keeps what Postgres did not take beside the spool). */
  persist(): Promise<void>;
  /** Stops the timer that persists on its own; `persist` still works. */
  stop(): void;
};

/**
 * A producer's loss accounting (design 8.4): each loss goes into `audit_drops` by reason; with a spool, the
 * counts Postgres has not taken yet are also on disk (`<source>.drops`), so a process killed before they
 * are stored loses none, and the counts an earlier process left there are taken over at start. Without
 * `db` (tests, benchmarks) losses are only in the producer's `stats()`.
 */
export function createProducerDrops(deps: {
  db?: Pick<DatabasePool, 'query'>;
  source: string;
  log: Logger;
  /** The spool while it is open. */
  spool: () => (AuditSpool & { unreadable?: number }) | undefined;
}): ProducerDrops {
  const { log, spool } = deps;
  const ledger = deps.db ? createDropLedger({ db: deps.db, source: deps.source, log }) : undefined;
  let timer: NodeJS.Timeout | undefined;

  function saveBesideSpool(): void {
    const open = spool();
    if (!open || !ledger) return;
    try {
      const pending = Object.entries(ledger.pending()) as Array<[AuditDropReason, number]>;
      open.saveDrops(Object.fromEntries(pending.map(([key, rows]) => [AUDIT_DROP_REASONS[key], rows])));
    } catch (error) {
      log.error({ err: error }, '[audit] could not keep the audit drop counts beside the spool');
    }
  }

  async function persist(): Promise<void> {
    await ledger?.persist();
    saveBesideSpool();
  }

  function dropped(reason: AuditDropReason, rows: number): void {
    if (!ledger || rows === 0) return;
    ledger.add(reason, rows);
    saveBesideSpool();
    timer ??= setTimeout(() => {
      timer = undefined;
      void persist();
    }, PERSIST_DROPS_MS).unref();
  }

  const opened = spool();
  if (opened && ledger) {
    // Counted by the process before this one, which stopped before Postgres took them.
    for (const [key, reason] of Object.entries(AUDIT_DROP_REASONS) as Array<[AuditDropReason, string]>) {
      const rows = opened.unstoredDrops[reason] ?? 0;
      if (rows > 0) dropped(key, rows);
    }
  }
  if (opened && (opened.unreadable ?? 0) > 0) {
    log.error({ dropped: opened.unreadable }, '[audit] unreadable audit spool lines — dropped');
    dropped('unreadable', opened.unreadable ?? 0);
  }

  return {
    dropped,
    persist,
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
