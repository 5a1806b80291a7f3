import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Sector } from '@pcg/shared/sectors';

export const DEMO_PROVIDER = 'demo';

/** The demo connection of a sector, created on first use, so seeding twice fills the same one. */
export async function ensureDemoConnection(db: DatabasePool, sector: Sector): Promise<string> {
  const existing = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id::text AS id FROM connections WHERE user_id = 1 AND provider = ${DEMO_PROVIDER} AND sector = ${sector}
    ORDER BY created_at LIMIT 1`);
  if (existing) return existing;
  return db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO connections (user_id, provider, sector, display_name, status)
    VALUES (1, ${DEMO_PROVIDER}, ${sector}, ${`Demo ${sector}`}, 'active')
    RETURNING id::text AS id`);
}

export async function markSynced(db: DatabasePool, connectionId: string): Promise<void> {
  await db.query(sql.unsafe`UPDATE connections SET last_synced_at = now(), last_error = NULL, updated_at = now() WHERE id = ${connectionId}::uuid`);
}
