import type { CommonQueryMethods } from 'slonik';
import { createConnectionQueries } from '../connections/index.ts';
import type { Sector } from '../sectors/index.ts';
import { ActionDefSchema, type ActionDef } from './live-types.ts';

/**
 * The actions the active connections of some sectors offer (design 4.3 `list_actions`), read from the
 * catalogue the sync-worker stores on each connection after a sync. Entries that do not parse are left out.
 */
export async function listConnectionActions(db: CommonQueryMethods, sectors: readonly Sector[]): Promise<Array<ActionDef & { connectionId: string }>> {
  const rows = await createConnectionQueries(db).activeInSectors(sectors);
  // Listed in the order the connections were made, whatever their sector.
  const ordered = [...rows].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  return ordered.flatMap((row) =>
    (Array.isArray(row.actions) ? row.actions : []).flatMap((action: unknown) => {
      const parsed = ActionDefSchema.safeParse(action);
      return parsed.success ? [{ ...parsed.data, connectionId: row.id }] : [];
    }),
  );
}

/** The active connection that offers an action by name (its sector is the name's first word), or null. */
export async function findActionConnection(db: CommonQueryMethods, name: string): Promise<string | null> {
  return createConnectionQueries(db).offeringAction(name.split('.')[0] ?? '', name);
}
