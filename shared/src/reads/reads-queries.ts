import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Sector } from '../sectors/index.ts';

const ConnectionRow = z.object({
  id: z.string(),
  sector: z.string(),
  provider: z.string(),
  status: z.string(),
  last_synced_at: z.string().nullable(),
  last_error: z.string().nullable(),
  consent_expires_at: z.string().nullable(),
});
export type ConnectionRow = z.infer<typeof ConnectionRow>;

/** Connections in the given sectors with what describe_context shows; finance adds the earliest consent expiry. */
export async function connectionsInSectors(db: DatabasePool, sectors: readonly Sector[]): Promise<readonly ConnectionRow[]> {
  if (sectors.length === 0) return [];
  return db.any(sql.type(ConnectionRow)`
    SELECT c.id::text AS id, c.sector, c.provider, c.status, c.last_synced_at, c.last_error,
           (SELECT min(a.consent_expires_at) FROM finance_accounts a WHERE a.connection_id = c.id) AS consent_expires_at
    FROM connections c
    WHERE c.user_id = 1 AND c.sector = ANY(${sql.array([...sectors], 'text')})
    ORDER BY c.sector, c.created_at, c.id`);
}

/** The active connections of one sector and their provider kinds. */
export async function activeConnections(db: DatabasePool, sector: Sector): Promise<ReadonlyArray<{ id: string; provider: string }>> {
  return db.any(sql.type(z.object({ id: z.string(), provider: z.string() }))`
    SELECT id::text AS id, provider FROM connections
    WHERE user_id = 1 AND sector = ${sector} AND status = 'active'
    ORDER BY created_at, id`);
}

export async function activeConnectionIds(db: DatabasePool, sector: Sector): Promise<readonly string[]> {
  return (await activeConnections(db, sector)).map((connection) => connection.id);
}
