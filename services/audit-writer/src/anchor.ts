import { AUDIT_ANCHOR_LOG_LINE, writeAuditAnchor, type AuditAnchor, type ChainHead } from '@pcg/shared/audit';
import type { Logger } from '@pcg/shared/logger';

export type AnchorKeeperDeps = {
  /** The chain's head as the writer last committed it (null before its first write). */
  head: () => ChainHead | null;
  /** `DATA_DIR`: the anchor file goes there. */
  dataDir: string;
  log: Logger;
  /** `AUDIT_ANCHOR_MS`. */
  intervalMs: number;
  /** Default the system clock. */
  now?: () => Date;
};

/**
 * Writes the chain's head outside the database every `intervalMs` when it moved: to the log stream,
 * which keeps every anchor, and to `DATA_DIR/audit-anchor.json` (0600), which keeps the last one. The
 * head is the one this writer committed, not one read back from the database, so a table rewritten
 * behind the writer's back is not anchored. A failed file write is logged and tried again next time.
 */
export function createAnchorKeeper(deps: AnchorKeeperDeps) {
  const { dataDir, log, intervalMs } = deps;
  const now = deps.now ?? (() => new Date());
  let written: string | null = null;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  async function anchorOnce(): Promise<AuditAnchor | null> {
    const head = deps.head();
    if (head === null || head.hash === written) return null;
    const anchor: AuditAnchor = { rows: head.seq, id: head.id, hash: head.hash, createdAt: head.createdAt, writtenAt: now().toISOString() };
    log.info({ auditAnchor: anchor }, AUDIT_ANCHOR_LOG_LINE);
    try {
      await writeAuditAnchor(dataDir, anchor);
      written = head.hash;
    } catch (error) {
      log.error({ err: error, dataDir }, '[audit] could not write the chain anchor file; will try again');
    }
    return anchor;
  }

  /** One anchor now, after any in progress; resolves to the anchor written, or null when the head had not moved. */
  function anchor(): Promise<AuditAnchor | null> {
    const next = running.then(anchorOnce);
    running = next.then(() => undefined);
    return next;
  }

  return {
    anchor,
    start(): void {
      timer = setInterval(() => void anchor(), intervalMs);
      timer.unref();
    },
    /** Stops the timer and anchors the last head (call after the writer's final flush). */
    async close(): Promise<void> {
      clearInterval(timer);
      await anchor();
    },
  };
}

export type AnchorKeeper = ReturnType<typeof createAnchorKeeper>;
