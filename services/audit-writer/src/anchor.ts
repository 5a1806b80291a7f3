import {
  AUDIT_ANCHOR_LOG_LINE,
  AuditAnchorUnreadableError,
  checkDescent,
  isOldFormatAnchor,
  readAuditAnchor,
  readChainStartBase,
  readDatabaseSystemId,
  writeAuditAnchor,
  type AuditAnchor,
  type ChainHead,
  type DescentBase,
} from '@pcg/shared/audit';
import type { AuditChainKey } from '@pcg/shared/crypto';
import type { DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';

/** Logged when the writer will not anchor a head that does not descend from its last anchored head. */
export const AUDIT_ANCHOR_REFUSED_LOG_LINE = '[audit] chain anchor refused: the head does not descend from the last anchored head';

/** Logged when the chain key in DATA_DIR is not the one the last anchor was written under (a lost or replaced key). */
export const AUDIT_CHAIN_KEY_MISMATCH_LOG_LINE =
  '[audit] the chain key in DATA_DIR is not the one the last anchor was written under: restore audit-chain.key from the backup; until then no head can be anchored';

export type AnchorKeeperDeps = {
  /** The chain's head as the writer last committed it (null before its first write). */
  head: () => ChainHead | null;
  /** Where the rows since the last anchor are read back from, to check the head descends from it. */
  db: DatabasePool;
  /** The chain key the rows are linked with. */
  key: AuditChainKey;
  /** `DATA_DIR`: the anchor file goes there. */
  dataDir: string;
  log: Logger;
  /** `AUDIT_ANCHOR_MS`. */
  intervalMs: number;
  /** Default the system clock. */
  now?: () => Date;
};

const baseOf = (anchor: AuditAnchor): DescentBase => ({
  rows: anchor.rows,
  id: anchor.id,
  hash: anchor.hash,
  createdAt: anchor.createdAt,
  firstKeyedRow: anchor.firstKeyedRow ?? null,
});

/**
 * Writes the chain's head outside the database every `intervalMs` when it moved: to the log stream,
 * which keeps every anchor, and to `DATA_DIR/audit-anchor.json` (0600), which keeps the last one. The
 * head is the one this writer committed, not one read back from the database, and it is anchored only if
 * it descends from the last anchored head: the rows between are read back and each must carry the chain
 * key's link, so a row forged into the database (and chained onto by the writer since) or a head moved
 * back is never sealed. The first anchor takes the file's last anchor as its base: one of the old format
 * (no chain id) is accepted this once and replaced; one of another chain (another database) is replaced
 * from this chain's start. A failed file write is logged and tried again next time.
 */
export function createAnchorKeeper(deps: AnchorKeeperDeps) {
  const { db, key, dataDir, log, intervalMs } = deps;
  const now = deps.now ?? (() => new Date());
  let written: string | null = null;
  let refused: string | null = null;
  let base: DescentBase | null = null;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  /** The last anchored head, read from the file once; this chain's start when there is none of this chain. */
  async function lastAnchored(head: ChainHead): Promise<DescentBase> {
    if (base !== null) return base;
    let anchor: AuditAnchor | null = null;
    try {
      anchor = await readAuditAnchor(dataDir);
    } catch (error) {
      if (!(error instanceof AuditAnchorUnreadableError)) throw error;
      log.warn({ dataDir }, '[audit] the chain anchor file is damaged; anchoring from the chain\'s start');
    }
    const another = anchor !== null && !isOldFormatAnchor(anchor) && anchor.chainId !== head.chainId && (anchor.firstHash == null || anchor.firstHash !== head.firstHash);
    if (anchor !== null && another) log.warn({ anchorChainId: anchor.chainId, chainId: head.chainId }, '[audit] the chain anchor in DATA_DIR belongs to another chain; it will be replaced');
    if (anchor !== null && !another && anchor.keyId != null && anchor.keyId !== key.id) {
      log.error({ anchorKeyId: anchor.keyId, keyId: key.id, file: key.file }, AUDIT_CHAIN_KEY_MISMATCH_LOG_LINE);
    }
    base = anchor !== null && !another ? baseOf(anchor) : await readChainStartBase(db);
    return base;
  }

  async function anchorOnce(): Promise<AuditAnchor | null> {
    const head = deps.head();
    if (head === null || head.hash === written || head.hash === refused) return null;
    const descent = await checkDescent(db, key.bytes, await lastAnchored(head), head);
    if (!descent.descends) {
      refused = head.hash;
      log.error({ rows: head.seq, id: head.id, detail: descent.detail }, AUDIT_ANCHOR_REFUSED_LOG_LINE);
      return null;
    }
    const anchor: AuditAnchor = {
      rows: head.seq,
      id: head.id,
      hash: head.hash,
      createdAt: head.createdAt,
      writtenAt: now().toISOString(),
      chainId: head.chainId,
      firstHash: head.firstHash,
      keyId: key.id,
      firstKeyedRow: descent.firstKeyedRow,
      databaseSystemId: await readDatabaseSystemId(db),
    };
    log.info({ auditAnchor: anchor }, AUDIT_ANCHOR_LOG_LINE);
    try {
      await writeAuditAnchor(dataDir, anchor);
      written = head.hash;
      base = baseOf(anchor);
    } catch (error) {
      log.error({ err: error, dataDir }, '[audit] could not write the chain anchor file; will try again');
    }
    return anchor;
  }

  /** One anchor now, after any in progress; resolves to the anchor written, or null when the head had not moved or was refused. */
  function anchor(): Promise<AuditAnchor | null> {
    const next = running.then(anchorOnce);
    running = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  return {
    anchor,
    start(): void {
      timer = setInterval(() => {
        anchor().catch((error: unknown) => log.error({ err: error }, '[audit] could not check the chain before anchoring; will try again'));
      }, intervalMs);
      timer.unref();
    },
    /** Stops the timer and anchors the last head (call after the writer's final flush). */
    async close(): Promise<void> {
      clearInterval(timer);
      await anchor().catch((error: unknown) => log.error({ err: error }, '[audit] could not check the chain before anchoring'));
    },
  };
}

export type AnchorKeeper = ReturnType<typeof createAnchorKeeper>;
