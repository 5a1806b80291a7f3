import { upsertRecords } from '@pcg/shared/cache';
import { ingestSecretMatches } from '@pcg/shared/crypto';
import type { DatabasePool } from '@pcg/shared/db';
import { ValidationError } from '@pcg/shared/errors';
import { readIngestPayload, type IngestFormat, type RejectedRecord } from '@pcg/shared/ingest';
import { findProvider } from '@pcg/shared/providers';
import { isSector, type Sector } from '@pcg/shared/sectors';
import { createConnectionQueries, type ConnectionQueries } from '@pcg/shared/connections';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type PushConnection = { id: string; sector: Sector; provider: string };

export type Authorization =
  | { ok: true; connection: PushConnection }
  /** `sector` is known when the id named a real connection (for the audit row only, never the answer). */
  | { ok: false; sector: string | null };

/**
 * What became of a push: rows written per object, and every record or data point not kept (`skipped`
 * counts them, `rejected` names them). `stored` is false when records were sent and none could be kept.
 */
export type IngestResult = { format: IngestFormat; accepted: Record<string, number>; skipped: number; rejected: RejectedRecord[]; stored: boolean };

export function createIngestService(deps: { db: DatabasePool; queries: Pick<ConnectionQueries, 'forIngest'> }) {
  return {
    /**
     * Checks a push before its body is read (spec 5). Every refusal looks the same to the caller, and a
     * digest comparison runs in every case, against nothing usable when there is no stored hash.
     */
    async authorize(connectionId: string, presented: string | undefined): Promise<Authorization> {
      if (!UUID.test(connectionId)) {
        ingestSecretMatches(presented, null);
        return { ok: false, sector: null };
      }
      const row = await deps.queries.forIngest(connectionId);
      const matches = ingestSecretMatches(presented, row?.ingest_secret_hash ?? null);
      if (!row) return { ok: false, sector: null };
      const push = findProvider(row.provider)?.signIn === 'push';
      const open = row.status === 'active' || row.status === 'error';
      if (!matches || !push || !open || !isSector(row.sector)) return { ok: false, sector: row.sector };
      return { ok: true, connection: { id: row.id, sector: row.sector, provider: row.provider } };
    },

    /**
     * Stores the good records of one push in one transaction through the upsert path: the connection
     * fixes user, sector and tables; re-sent records update in place. Records that cannot be stored were
     * refused one by one before the transaction, so one bad value never costs the others. The push time
     * becomes the connection's last sync, unless nothing of it could be kept.
     */
    async ingest(connection: PushConnection, body: unknown): Promise<IngestResult> {
      if (body === undefined || body === null) throw new ValidationError('empty body: send the export JSON or {"records":[…]}');
      const batch = readIngestPayload(body, connection.sector);
      const { format, skipped, rejected } = batch;
      const good = [...batch.byObject.values()].some((records) => records.length > 0);
      if (!good && rejected.length > 0) return { format, accepted: {}, skipped, rejected, stored: false };
      const accepted: Record<string, number> = {};
      await deps.db.transaction(async (tx) => {
        for (const [object, records] of batch.byObject) {
          accepted[object] = await upsertRecords(tx, { object, connectionId: connection.id, source: connection.provider, records });
        }
        await createConnectionQueries(tx).recordPush(connection.id);
      });
      return { format, accepted, skipped, rejected, stored: true };
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;
