import { createConnectionQueries, withConnectionSyncLock, type ConnectionRow as SharedConnectionRow, type SyncSuccess } from '@pcg/shared/connections';
import { sql, type DatabasePool } from '@pcg/shared/db';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { deleteRecords, upsertRecords } from '@pcg/shared/cache';
import { findObject } from '@pcg/shared/sectors';
import type { DemoEndpoints } from '@pcg/shared/providers';
import { z } from 'zod';
import type { CacheWriter } from '../connectors/connector-types.ts';
import { assertCatalogueFields } from '../connectors/kit/strict-records.ts';

/** A connection as the worker runs it: the shared row plus its sealed credentials and what they are bound to. */
export type ConnectionRow = SharedConnectionRow & {
  credentials: Buffer | null;
  credentials_context: string;
  /** Its sign-in's demo stand-ins (issue 42): a demo connection's connector reads from them; null otherwise. */
  demo_endpoints: DemoEndpoints | null;
};

/** A date or timestamp column of an object, named only through the catalogue. */
function columnOf(object: string, field: string) {
  const def = findObject(object)?.fields.find((candidate) => candidate.name === field && (candidate.type === 'date' || candidate.type === 'timestamp') && !candidate.computed);
  if (!def) throw new Error(`'${field}' is not a date field of '${object}'`);
  return sql.identifier([def.column ?? def.name]);
}

function tableOf(object: string) {
  const def = findObject(object);
  if (!def) throw new Error(`unknown object '${object}'`);
  return sql.identifier([def.table]);
}

/** The sync-worker's view of connections (through `@pcg/shared/connections`) and of its connections' cache rows. */
export function createConnectionStore(db: DatabasePool) {
  const connections = createConnectionQueries(db);
  return {
    async load(id: string): Promise<ConnectionRow | null> {
      const row = await connections.get(id);
      if (!row) return null;
      const sealed = await connections.sealedCredentials(id);
      const demoEndpoints = row.sign_in_id ? ((await createSignInQueries(db).get(row.sign_in_id))?.demo_endpoints ?? null) : null;
      return { ...row, credentials: sealed?.credentials ?? null, credentials_context: sealed?.context ?? row.id, demo_endpoints: demoEndpoints };
    },

    /** Connections that should have a sync scheduler: not paused and not waiting for a new sign-in. */
    listSchedulable: () => connections.schedulable(),

    /** Runs `work` holding the connection's sync lock; undefined when another sync holds it. */
    withSyncLock: <T>(id: string, work: () => Promise<T>) => withConnectionSyncLock(db, id, work),

    recordSuccess: (id: string, outcome: SyncSuccess) => connections.recordSuccess(id, outcome),
    saveCursor: (id: string, cursor: unknown) => connections.saveCursor(id, cursor),
    noteFailure: (id: string, message: string, exhausted: boolean) => connections.noteFailure(id, message, exhausted),
    /**
     * The source refused the credentials: the grant is gone, so every connection of its sign-in waits
     * for a new sign-in (a connection without one waits alone).
     */
    async markNeedsSignIn(id: string, message: string): Promise<void> {
      const signInId = (await connections.get(id))?.sign_in_id ?? null;
      if (signInId === null) return connections.markNeedsSignIn(id, message);
      await db.transaction(async (tx) => createSignInQueries(tx).grantGone(signInId, message));
    },

    /** The gateway id of a cached record of this connection → the source's id, for live reads by id. */
    sourceIdOf(connectionId: string, object: string, gatewayId: string): Promise<string | null> {
      return db.maybeOneFirst(sql.type(z.object({ source_id: z.string() }))`
        SELECT source_id FROM ${tableOf(object)} WHERE connection_id = ${connectionId}::uuid AND id = ${gatewayId}`);
    },

    /** The connection's slice of the cache, written only through the one upsert path, records checked strictly. */
    cacheWriter(connection: Pick<ConnectionRow, 'id' | 'provider'>): CacheWriter & { counts: { written: number; removed: number } } {
      const counts = { written: 0, removed: 0 };
      return {
        counts,
        async upsert(object, records) {
          assertCatalogueFields(object, records);
          const written = await upsertRecords(db, { object, connectionId: connection.id, source: connection.provider, records });
          counts.written += written;
          return written;
        },
        async sourceIds(object, since) {
          const window = since ? sql.fragment`AND (${columnOf(object, since.field)} IS NULL OR ${columnOf(object, since.field)} >= ${since.from})` : sql.fragment``;
          return [
            ...(await db.anyFirst(sql.type(z.object({ source_id: z.string() }))`
              SELECT source_id FROM ${tableOf(object)} WHERE connection_id = ${connection.id}::uuid ${window} ORDER BY source_id`)),
          ];
        },
        async idsOf(object, sourceIds) {
          if (sourceIds.length === 0) return new Map();
          const rows = await db.any(sql.type(z.object({ id: z.string(), source_id: z.string() }))`
            SELECT id, source_id FROM ${tableOf(object)} WHERE connection_id = ${connection.id}::uuid AND source_id = ANY(${sql.array([...sourceIds], 'text')})`);
          return new Map(rows.map((row) => [row.source_id, row.id]));
        },
        async remove(object, sourceIds) {
          const removed = await deleteRecords(db, { object, connectionId: connection.id, sourceIds });
          counts.removed += removed;
          return removed;
        },
      };
    },
  };
}

export type ConnectionStore = ReturnType<typeof createConnectionStore>;
