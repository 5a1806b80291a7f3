import { sql, type DatabasePool } from '@pcg/shared/db';
import { deleteRecords, upsertRecords } from '@pcg/shared/cache';
import type { ActionDef } from '@pcg/shared/live';
import { findObject } from '@pcg/shared/sectors';
import { z } from 'zod';
import type { CacheWriter } from '../connectors/connector-types.ts';
import { assertCatalogueFields } from '../connectors/kit/strict-records.ts';

type Json = Parameters<typeof sql.jsonb>[0];

const ConnectionRowSchema = z.object({
  id: z.string(),
  provider: z.string(),
  sector: z.string(),
  display_name: z.string(),
  status: z.enum(['active', 'paused', 'error', 'needs_sign_in']),
  credentials: z.instanceof(Buffer).nullable(),
  sync_cursor: z.unknown(),
  sync_interval_minutes: z.number().nullable(),
});
export type ConnectionRow = z.infer<typeof ConnectionRowSchema>;

const COLUMNS = sql.fragment`id::text AS id, provider, sector, display_name, status, credentials, sync_cursor, sync_interval_minutes`;

function tableOf(object: string) {
  const def = findObject(object);
  if (!def) throw new Error(`unknown object '${object}'`);
  return sql.identifier([def.table]);
}

/** The sync-worker's reads and writes of connection rows (the only SQL the worker holds). */
export function createConnectionStore(db: DatabasePool) {
  return {
    load(id: string): Promise<ConnectionRow | null> {
      return db.maybeOne(sql.type(ConnectionRowSchema)`SELECT ${COLUMNS} FROM connections WHERE id = ${id}::uuid AND user_id = 1`);
    },

    /** Connections that should have a sync scheduler: not paused and not waiting for a new sign-in. */
    listSchedulable(): Promise<readonly ConnectionRow[]> {
      return db.any(sql.type(ConnectionRowSchema)`
        SELECT ${COLUMNS} FROM connections WHERE user_id = 1 AND status IN ('active', 'error') ORDER BY created_at`);
    },

    /**
     * Runs `work` holding a session advisory lock on the connection, so two syncs of one connection never
     * overlap (a manual sync beside a scheduled one, two workers). Returns undefined when it is held
     * elsewhere. A killed worker's lock goes with its database session.
     */
    async withSyncLock<T>(id: string, work: () => Promise<T>): Promise<T | undefined> {
      return db.connect(async (connection) => {
        const key = sql.fragment`hashtextextended(${`sync:${id}`}, 0)`;
        const locked = await connection.oneFirst(sql.type(z.object({ locked: z.boolean() }))`SELECT pg_try_advisory_lock(${key}) AS locked`);
        if (!locked) return undefined;
        try {
          return await work();
        } finally {
          await connection.query(sql.unsafe`SELECT pg_advisory_unlock(${key})`);
        }
      });
    },

    /** A whole sync succeeded: keep its cursor (and catalogue), clear the error; a paused connection stays paused. */
    async recordSuccess(id: string, cursor: unknown, actions: readonly ActionDef[] | undefined): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections
        SET sync_cursor = ${sql.jsonb(cursor as Json)},
            actions = COALESCE(${actions === undefined ? null : sql.jsonb(actions as Json)}::jsonb, actions),
            last_synced_at = now(), last_error = NULL,
            status = CASE WHEN status = 'error' THEN 'active' ELSE status END,
            updated_at = now()
        WHERE id = ${id}::uuid`);
    },

    /** A failure the operator should see; `exhausted` (no retry left) also marks the connection `error`. */
    async noteFailure(id: string, message: string, exhausted: boolean): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections
        SET last_error = ${message},
            status = CASE WHEN ${exhausted} AND status = 'active' THEN 'error' ELSE status END,
            updated_at = now()
        WHERE id = ${id}::uuid`);
    },

    /** The source refused the credentials: nothing runs again until the operator signs in again. */
    async markNeedsSignIn(id: string, message: string): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections
        SET status = CASE WHEN status = 'paused' THEN status ELSE 'needs_sign_in' END, last_error = ${message}, updated_at = now()
        WHERE id = ${id}::uuid`);
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
        async sourceIds(object) {
          return [
            ...(await db.anyFirst(sql.type(z.object({ source_id: z.string() }))`
              SELECT source_id FROM ${tableOf(object)} WHERE connection_id = ${connection.id}::uuid ORDER BY source_id`)),
          ];
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
