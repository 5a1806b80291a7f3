import type { CommonQueryMethods } from 'slonik';
import { createConnectionQueries, type ConnectionRow } from '../connections/index.ts';
import type { Sector } from '../sectors/index.ts';

export type { ConnectionRow };

/** Connections in the given sectors with what describe_context shows (finance adds the earliest consent expiry). */
export function connectionsInSectors(db: CommonQueryMethods, sectors: readonly Sector[]): Promise<readonly ConnectionRow[]> {
  return createConnectionQueries(db).inSectors(sectors);
}

export type ActiveConnection = Pick<ConnectionRow, 'id' | 'provider' | 'display_name' | 'last_synced_at'>;

/** The active connections of one sector: provider kind, name and when their data last arrived. */
export async function activeConnections(db: CommonQueryMethods, sector: Sector): Promise<readonly ActiveConnection[]> {
  return (await createConnectionQueries(db).activeInSectors([sector])).map(({ id, provider, display_name, last_synced_at }) => ({ id, provider, display_name, last_synced_at }));
}

export async function activeConnectionIds(db: CommonQueryMethods, sector: Sector): Promise<readonly string[]> {
  return (await activeConnections(db, sector)).map((connection) => connection.id);
}
