import { randomBytes, randomUUID } from 'node:crypto';
import { sealCredentials } from '@pcg/shared/crypto';
import { sql, type DatabasePool } from '@pcg/shared/db';
import { z } from 'zod';

/** One credentials key per test run, handed to the worker through CREDENTIALS_KEY. */
export const TEST_KEY = randomBytes(32);

/** Worker settings for tests: short timeouts and backoff, so failures play out in seconds. */
export function workerEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    CREDENTIALS_KEY: TEST_KEY.toString('base64'),
    SOURCE_TIMEOUT_MS: '500',
    SYNC_BACKOFF_MS: '100',
    SYNC_LOCK_MS: '2000',
    SHUTDOWN_GRACE_MS: '1000',
    ...overrides,
  };
}

/** Inserts a Home Assistant connection the way the Console does: credentials sealed, bound to the id. */
export async function insertHubConnection(db: DatabasePool, credentials: { baseUrl: string; token: string }, status = 'active'): Promise<string> {
  const id = randomUUID();
  const sealed = sealCredentials(TEST_KEY, credentials, id);
  await db.query(sql.unsafe`
    INSERT INTO connections (id, user_id, provider, sector, display_name, status, credentials, sync_interval_minutes)
    VALUES (${id}::uuid, 1, 'home-assistant', 'home', 'Test hub', ${status}, ${sql.binary(sealed)}, 15)`);
  return id;
}

export const ConnectionStateSchema = z.object({
  status: z.string(),
  last_error: z.string().nullable(),
  last_synced_at: z.string().nullable(),
  sync_cursor: z.unknown(),
  actions: z.array(z.object({ name: z.string(), sector: z.string(), description: z.string(), input_schema: z.record(z.string(), z.unknown()) })),
});

export function connectionState(db: DatabasePool, id: string) {
  return db.one(sql.type(ConnectionStateSchema)`
    SELECT status, last_error, last_synced_at, sync_cursor, actions FROM connections WHERE id = ${id}::uuid`);
}

const EntityRowSchema = z.object({ id: z.string(), source_id: z.string(), state: z.string().nullable(), synced_at: z.string(), attributes: z.unknown() });

export function entityRows(db: DatabasePool, connectionId: string) {
  return db.any(sql.type(EntityRowSchema)`
    SELECT id, source_id, state, synced_at, attributes FROM home_entities WHERE connection_id = ${connectionId}::uuid ORDER BY source_id`);
}
