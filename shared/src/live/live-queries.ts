import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Sector } from '../sectors/index.ts';
import { ActionDefSchema, type ActionDef } from './live-types.ts';

const Row = z.object({ id: z.string(), actions: z.unknown() });

/**
 * The actions the active connections of some sectors offer (design 4.3 `list_actions`), read from the
 * catalogue the sync-worker stores on each connection after a sync. Entries that do not parse are left out.
 */
export async function listConnectionActions(db: DatabasePool, sectors: readonly Sector[]): Promise<Array<ActionDef & { connectionId: string }>> {
  if (sectors.length === 0) return [];
  const rows = await db.any(sql.type(Row)`
    SELECT id::text AS id, actions FROM connections
    WHERE user_id = 1 AND status = 'active' AND sector = ANY(${sql.array([...sectors], 'text')})
    ORDER BY created_at, id`);
  return rows.flatMap((row) =>
    (Array.isArray(row.actions) ? row.actions : []).flatMap((action) => {
      const parsed = ActionDefSchema.safeParse(action);
      return parsed.success ? [{ ...parsed.data, connectionId: row.id }] : [];
    }),
  );
}

/** The active connection that offers an action by name (its sector is the name's first word), or null. */
export async function findActionConnection(db: DatabasePool, name: string): Promise<string | null> {
  const sector = name.split('.')[0] ?? '';
  return db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id::text AS id FROM connections
    WHERE user_id = 1 AND status = 'active' AND sector = ${sector}
      AND actions @> ${sql.jsonb([{ name }])}
    ORDER BY created_at, id LIMIT 1`);
}
