import { randomUUID } from 'node:crypto';
import { createConnectionQueries } from '@pcg/shared/connections';
import type { DatabasePool } from '@pcg/shared/db';
import type { Sector } from '@pcg/shared/sectors';

export const DEMO_PROVIDER = 'demo';

/** A demo connection of a sector, known by its name, created on first use, so seeding twice fills the same one. */
export async function ensureDemoConnection(db: DatabasePool, sector: Sector, displayName = `Demo ${sector}`): Promise<string> {
  const connections = createConnectionQueries(db);
  const existing = (await connections.inSectors([sector])).find((connection) => connection.provider === DEMO_PROVIDER && connection.display_name === displayName);
  if (existing) return existing.id;
  const created = await connections.insert({
    id: randomUUID(),
    provider: DEMO_PROVIDER,
    sector,
    displayName,
    signInId: null,
    ingestSecretHash: null,
    syncIntervalMinutes: null,
  });
  return created.id;
}

/** The demo data arrived: the connection's data age starts now. */
export async function markSynced(db: DatabasePool, connectionId: string): Promise<void> {
  await createConnectionQueries(db).recordPush(connectionId);
}
