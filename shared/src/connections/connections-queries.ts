import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { OPERATOR_USER_ID } from '../db/operator-user.ts';
import { DemoEndpointsSchema, type DemoEndpoints } from '../providers/demo-endpoints.ts';
import { ConnectionRowSchema, IngestRowSchema, type ConnectionRow, type IngestRow, type NewConnection } from './connections-types.ts';

type Json = Parameters<typeof sql.jsonb>[0];

/** What a whole sync leaves on its connection. */
export type SyncSuccess = { cursor: unknown; actions?: readonly unknown[]; notice?: string; timeZone?: string };

const COLUMNS = sql.fragment`
  c.id::text AS id, c.provider, c.sector, c.display_name, c.status, c.sign_in_id::text AS sign_in_id, c.sync_interval_minutes, c.sync_cursor, c.actions,
  c.last_synced_at, c.last_error, c.ingest_secret_hash IS NOT NULL AS has_ingest_secret,
  (SELECT min(a.consent_expires_at) FROM finance_accounts a WHERE a.connection_id = c.id) AS consent_expires_at,
  c.created_at, c.updated_at`;

/** A sign-in deleted with its last connection, as it was stored. */
export type RemovedSignIn = { id: string; provider: string; sealedCredentials: Buffer; demoEndpoints: DemoEndpoints | null };
const RemovedRowSchema = z.object({ sign_in_id: z.string().nullable(), provider: z.string().nullable(), credentials: z.instanceof(Buffer).nullable(), demo_endpoints: DemoEndpointsSchema.nullable() });

const MINE = sql.fragment`c.user_id = ${OPERATOR_USER_ID}`;
const ORDER = sql.fragment`ORDER BY c.sector, c.created_at, c.id`;

/**
 * The one home of SQL on `connections`: every read and every status move, for the Console, the
 * sync-worker, the read service and the live path. Moves:
 * - pause → `paused`; resume → `active` (error cleared); replace credentials → `active`, cursor dropped;
 * - a whole sync → `error` becomes `active`, the cursor and catalogue are kept, the error cleared;
 * - a failed attempt → the error noted; the last attempt → `active` becomes `error`;
 * - credentials refused → `needs_sign_in` (a paused connection stays paused).
 * `db` may be a pool or a transaction.
 */
export function createConnectionQueries(db: CommonQueryMethods) {
  const one = (id: string) => db.maybeOne(sql.type(ConnectionRowSchema)`SELECT ${COLUMNS} FROM connections c WHERE c.id = ${id}::uuid AND ${MINE}`);
  /** Runs an UPDATE and returns the row as it now is, or null when there is no such connection. */
  const updated = async (id: string, assignments: ReturnType<typeof sql.fragment>): Promise<ConnectionRow | null> => {
    const changed = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
      UPDATE connections c SET ${assignments}, updated_at = now() WHERE c.id = ${id}::uuid AND ${MINE} RETURNING c.id::text AS id`);
    return changed === null ? null : one(changed);
  };
  const many = (where: ReturnType<typeof sql.fragment>) =>
    db.any(sql.type(ConnectionRowSchema)`SELECT ${COLUMNS} FROM connections c WHERE ${MINE} AND ${where} ${ORDER}`);
  const inList = (sectors: readonly string[]) => sql.fragment`c.sector = ANY(${sql.array([...sectors], 'text')})`;

  return {
    get: one,
    list: () => many(sql.fragment`TRUE`),
    inSectors: async (sectors: readonly string[]) => (sectors.length === 0 ? [] : many(inList(sectors))),
    /** Active connections only: the ones that serve live reads and actions. */
    activeInSectors: async (sectors: readonly string[]) => (sectors.length === 0 ? [] : many(sql.fragment`${inList(sectors)} AND c.status = 'active'`)),
    /** Connections that should have a sync scheduler: not paused and not waiting for a new sign-in. */
    schedulable: () => many(sql.fragment`c.status IN ('active', 'error')`),
    /** The first active connection of a sector whose stored catalogue offers the action `name`. */
    offeringAction: (sector: string, name: string) =>
      db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
        SELECT c.id::text AS id FROM connections c
        WHERE ${MINE} AND c.status = 'active' AND c.sector = ${sector} AND c.actions @> ${sql.jsonb([{ name }])}
        ORDER BY c.created_at, c.id LIMIT 1`),

    async insert(row: NewConnection): Promise<ConnectionRow> {
      await db.query(sql.unsafe`
        INSERT INTO connections (id, user_id, provider, sector, display_name, status, sign_in_id, ingest_secret_hash, sync_interval_minutes)
        VALUES (${row.id}::uuid, ${OPERATOR_USER_ID}, ${row.provider}, ${row.sector}, ${row.displayName}, 'active', ${row.signInId}::uuid, ${row.ingestSecretHash ? sql.binary(row.ingestSecretHash) : null},
                ${row.syncIntervalMinutes})`);
      const inserted = await one(row.id);
      if (!inserted) throw new Error('the inserted connection is not there');
      return inserted;
    },
    setInterval: (id: string, minutes: number) => updated(id, sql.fragment`sync_interval_minutes = ${minutes}`),
    rename: (id: string, displayName: string) => updated(id, sql.fragment`display_name = ${displayName}`),
    pause: (id: string) => updated(id, sql.fragment`status = 'paused'`),
    /** Resumes, and clears the last error: it comes back with the next sync if the cause is still there. */
    resume: (id: string) => updated(id, sql.fragment`status = 'active', last_error = NULL`),
    /** The connections of a sign-in, in sector order. */
    ofSignIn: (signInId: string) => many(sql.fragment`c.sign_in_id = ${signInId}::uuid`),
    /**
     * The sign-in's credentials were replaced by a paste (a token provider): its connections are active
     * again, and, since a new token may reach another source, their cursors go so the next sync is full.
     */
    async credentialsReplaced(signInId: string): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections c SET sync_cursor = NULL, status = 'active', last_error = NULL, updated_at = now()
        WHERE c.sign_in_id = ${signInId}::uuid AND ${MINE}`);
    },
    /** A re-sign-in granted these sectors again: waiting connections become active; cursors and rows are kept. */
    async regranted(signInId: string, sectors: readonly string[]): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections c SET status = 'active', last_error = NULL, updated_at = now()
        WHERE c.sign_in_id = ${signInId}::uuid AND ${MINE} AND c.status = 'needs_sign_in' AND ${inList(sectors)}`);
    },
    /** Connections of a sign-in that must wait for a new sign-in (grant gone, or the sector no longer granted); rows are kept. */
    async signInNeeded(signInId: string, message: string, sectors?: readonly string[]): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections c
        SET status = CASE WHEN status = 'paused' THEN status ELSE 'needs_sign_in' END, last_error = ${message}, updated_at = now()
        WHERE c.sign_in_id = ${signInId}::uuid AND ${MINE} ${sectors ? sql.fragment`AND ${inList(sectors)}` : sql.fragment``}`);
    },
    replaceSecretHash: (id: string, hash: Buffer) => updated(id, sql.fragment`ingest_secret_hash = ${sql.binary(hash)}`),
    /**
     * Removes the connection and, with it, everything it cached (ON DELETE CASCADE); its sign-in goes
     * too when no other connection uses it, so no credential outlives its last connection. Null when
     * there was no such connection; otherwise the sign-in that went with it (its sealed credentials, so
     * that a source holding a grant of its own can be told to drop it), or null when none went.
     */
    remove: async (id: string): Promise<{ signInGone: RemovedSignIn | null } | null> => {
      const rows = await db.any(sql.type(RemovedRowSchema)`
        WITH gone AS (DELETE FROM connections c WHERE c.id = ${id}::uuid AND ${MINE} RETURNING c.sign_in_id),
        orphan AS (
          DELETE FROM sign_ins s WHERE s.id IN (SELECT sign_in_id FROM gone)
            AND NOT EXISTS (SELECT 1 FROM connections o WHERE o.sign_in_id = s.id AND o.id <> ${id}::uuid)
          RETURNING s.id, s.provider, s.credentials, s.demo_endpoints
        )
        SELECT o.id::text AS sign_in_id, o.provider, o.credentials, o.demo_endpoints FROM gone LEFT JOIN orphan o ON TRUE`);
      const [row] = rows;
      if (!row) return null;
      return { signInGone: row.sign_in_id && row.provider && row.credentials ? { id: row.sign_in_id, provider: row.provider, sealedCredentials: row.credentials, demoEndpoints: row.demo_endpoints } : null };
    },

    /** The sealed credentials of a pulled connection (its sign-in's) and the id they are bound to; null for none. */
    sealedCredentials: (id: string) =>
      db.maybeOne(sql.type(z.object({ credentials: z.instanceof(Buffer), context: z.string() }))`
        SELECT s.credentials, s.id::text AS context FROM connections c JOIN sign_ins s ON s.id = c.sign_in_id
        WHERE c.id = ${id}::uuid AND ${MINE}`),
    forIngest: (id: string): Promise<IngestRow | null> =>
      db.maybeOne(sql.type(IngestRowSchema)`
        SELECT c.id::text AS id, c.provider, c.sector, c.status, c.ingest_secret_hash FROM connections c WHERE c.id = ${id}::uuid AND ${MINE}`),

    /** A push was stored: it counts as the connection's last sync. */
    async recordPush(id: string): Promise<void> {
      await db.query(sql.unsafe`UPDATE connections c SET last_synced_at = now(), last_error = NULL, updated_at = now() WHERE c.id = ${id}::uuid AND ${MINE}`);
    },
    /**
     * A whole sync succeeded: keep its cursor (and catalogue), clear the error — or keep the source's
     * own `notice` (a bank that did not answer) as the error its health shows; a paused connection stays
     * paused. A `timeZone` the source reported (the hub's own zone) replaces the stored one.
     */
    async recordSuccess(id: string, outcome: SyncSuccess): Promise<void> {
      const { cursor, actions, notice, timeZone } = outcome;
      await db.query(sql.unsafe`
        UPDATE connections c
        SET sync_cursor = ${sql.jsonb(cursor as Json)},
            actions = COALESCE(${actions === undefined ? null : sql.jsonb(actions as Json)}::jsonb, actions),
            source_time_zone = COALESCE(${timeZone ?? null}, source_time_zone),
            last_synced_at = now(), last_error = ${notice ?? null},
            status = CASE WHEN status = 'error' THEN 'active' ELSE status END,
            updated_at = now()
        WHERE c.id = ${id}::uuid AND ${MINE}`);
    },
    /**
     * The zone a connected source reports (the home hub's), the most recently synced first; null when none
     * does. A paused connection still counts: pausing stops syncs, it does not move the person.
     */
    sourceTimeZone: () =>
      db.maybeOneFirst(sql.type(z.object({ source_time_zone: z.string() }))`
        SELECT c.source_time_zone FROM connections c
        WHERE ${MINE} AND c.source_time_zone IS NOT NULL
        ORDER BY c.last_synced_at DESC NULLS LAST, c.created_at LIMIT 1`),
    /**
     * Progress of a sync still under way (a long full sync cut short by a rate limit), for its next attempt to
     * resume from: the cursor alone, nothing counts as synced. The sync's final cursor replaces it.
     */
    async saveCursor(id: string, cursor: unknown): Promise<void> {
      await db.query(sql.unsafe`UPDATE connections c SET sync_cursor = ${sql.jsonb(cursor as Json)}, updated_at = now() WHERE c.id = ${id}::uuid AND ${MINE}`);
    },
    /** A failure the operator should see; `exhausted` (no retry left) also marks the connection `error`. */
    async noteFailure(id: string, message: string, exhausted: boolean): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections c
        SET last_error = ${message}, status = CASE WHEN ${exhausted} AND status = 'active' THEN 'error' ELSE status END, updated_at = now()
        WHERE c.id = ${id}::uuid AND ${MINE}`);
    },
    /** The source refused the credentials: nothing runs again until the operator signs in again. */
    async markNeedsSignIn(id: string, message: string): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE connections c
        SET status = CASE WHEN status = 'paused' THEN status ELSE 'needs_sign_in' END, last_error = ${message}, updated_at = now()
        WHERE c.id = ${id}::uuid AND ${MINE}`);
    },
  };
}

export type ConnectionQueries = ReturnType<typeof createConnectionQueries>;

/**
 * Runs `work` holding a session advisory lock on the connection, so two syncs of one connection never
 * overlap (a manual sync beside a scheduled one, two workers). Returns undefined when it is held
 * elsewhere. A killed worker's lock goes with its database session.
 */
export async function withConnectionSyncLock<T>(db: DatabasePool, id: string, work: () => Promise<T>): Promise<T | undefined> {
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
}
