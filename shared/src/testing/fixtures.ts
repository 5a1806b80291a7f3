import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Sector } from '../sectors/index.ts';

/** Inserts a connection row directly (tests only) and returns its id. */
export async function insertTestConnection(
  db: DatabasePool,
  options: { sector: Sector; provider?: string; status?: string; displayName?: string },
): Promise<string> {
  return db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO connections (user_id, provider, sector, status, display_name)
    VALUES (1, ${options.provider ?? `test-${options.sector}`}, ${options.sector}, ${options.status ?? 'active'},
            ${options.displayName ?? `Test ${options.sector}`})
    RETURNING id::text`);
}
