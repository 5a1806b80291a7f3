import { sql, type DatabasePool } from '@pcg/shared/db';
import { z } from 'zod';

const ConnectionRowSchema = z.object({
  id: z.string(),
  provider: z.string(),
  sector: z.string(),
  display_name: z.string(),
  status: z.enum(['active', 'paused', 'error', 'needs_sign_in']),
  sync_interval_minutes: z.number().nullable(),
  last_synced_at: z.string().nullable(),
  last_error: z.string().nullable(),
  has_ingest_secret: z.boolean(),
  action_count: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConnectionRow = z.infer<typeof ConnectionRowSchema>;

// Never the credentials or the secret hash: what leaves this file cannot carry them.
const COLUMNS = sql.fragment`
  id::text AS id, provider, sector, display_name, status, sync_interval_minutes, last_synced_at, last_error,
  ingest_secret_hash IS NOT NULL AS has_ingest_secret, jsonb_array_length(actions) AS action_count, created_at, updated_at`;

const IngestRowSchema = z.object({
  id: z.string(),
  provider: z.string(),
  sector: z.string(),
  status: z.string(),
  ingest_secret_hash: z.instanceof(Buffer).nullable(),
});
export type IngestRow = z.infer<typeof IngestRowSchema>;

export type NewConnection = {
  id: string;
  provider: string;
  sector: string;
  displayName: string;
  credentials: Buffer | null;
  ingestSecretHash: Buffer | null;
  syncIntervalMinutes: number | null;
};

export function createConnectionsQueries(db: DatabasePool) {
  const one = (id: string) => db.maybeOne(sql.type(ConnectionRowSchema)`SELECT ${COLUMNS} FROM connections WHERE id = ${id}::uuid AND user_id = 1`);
  /** Runs an UPDATE and returns the row as it now is, or null when there is no such connection. */
  const updated = async (id: string, assignments: ReturnType<typeof sql.fragment>) =>
    db.maybeOne(sql.type(ConnectionRowSchema)`
      UPDATE connections SET ${assignments}, updated_at = now() WHERE id = ${id}::uuid AND user_id = 1 RETURNING ${COLUMNS}`);

  return {
    list: () => db.any(sql.type(ConnectionRowSchema)`SELECT ${COLUMNS} FROM connections WHERE user_id = 1 ORDER BY sector, created_at, id`),
    get: one,
    insert: (row: NewConnection) =>
      db.one(sql.type(ConnectionRowSchema)`
        INSERT INTO connections (id, user_id, provider, sector, display_name, status, credentials, ingest_secret_hash, sync_interval_minutes)
        VALUES (${row.id}::uuid, 1, ${row.provider}, ${row.sector}, ${row.displayName}, 'active',
                ${row.credentials ? sql.binary(row.credentials) : null}, ${row.ingestSecretHash ? sql.binary(row.ingestSecretHash) : null},
                ${row.syncIntervalMinutes})
        RETURNING ${COLUMNS}`),
    setInterval: (id: string, minutes: number) => updated(id, sql.fragment`sync_interval_minutes = ${minutes}`),
    rename: (id: string, displayName: string) => updated(id, sql.fragment`display_name = ${displayName}`),
    pause: (id: string) => updated(id, sql.fragment`status = 'paused'`),
    /** Resumes, and clears the last error: it comes back with the next sync if the cause is still there. */
    resume: (id: string) => updated(id, sql.fragment`status = 'active', last_error = NULL`),
    // New credentials may reach another hub: the cursor goes, so the next sync is a full one.
    replaceCredentials: (id: string, sealed: Buffer) =>
      updated(id, sql.fragment`credentials = ${sql.binary(sealed)}, sync_cursor = NULL, status = 'active', last_error = NULL`),
    replaceSecretHash: (id: string, hash: Buffer) => updated(id, sql.fragment`ingest_secret_hash = ${sql.binary(hash)}`),
    remove: async (id: string) => (await db.query(sql.unsafe`DELETE FROM connections WHERE id = ${id}::uuid AND user_id = 1`)).rowCount > 0,
    forIngest: (id: string) =>
      db.maybeOne(sql.type(IngestRowSchema)`
        SELECT id::text AS id, provider, sector, status, ingest_secret_hash FROM connections WHERE id = ${id}::uuid AND user_id = 1`),
  };
}

export type ConnectionsQueries = ReturnType<typeof createConnectionsQueries>;
