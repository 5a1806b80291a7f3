import type { CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { sql } from '../db/index.ts';
import { OPERATOR_USER_ID } from '../grants/grants-types.ts';
import { parsePublicOrigin } from './public-origin.ts';
import { PUBLIC_ORIGIN_SETTING } from './settings-types.ts';

export { PUBLIC_ORIGIN_SETTING } from './settings-types.ts';

/** A stored value must already be a normalised origin: a hand-edited row fails loudly, never half-works. */
const StoredOriginSchema = z.object({
  value: z.string().refine((value) => {
    const parsed = parsePublicOrigin(value);
    return parsed.ok && parsed.origin === value;
  }, 'the stored public origin is not a normalised origin'),
});

/**
 * SQL for the public-origin row of `settings`. Every statement names that row: the table's other rows
 * hold server secrets (cursor keys), which nothing here may read or serve.
 */
export function createSettingsQueries(db: CommonQueryMethods) {
  return {
    /** The saved origin, or null while none is saved (bridge off). */
    async readPublicOrigin(): Promise<string | null> {
      return db.maybeOneFirst(sql.type(StoredOriginSchema)`
        SELECT value FROM settings WHERE user_id = ${OPERATOR_USER_ID} AND name = ${PUBLIC_ORIGIN_SETTING}`);
    },

    /** Stores an origin already normalised by `parsePublicOrigin`; null deletes the row (bridge off). */
    async writePublicOrigin(origin: string | null): Promise<void> {
      if (origin === null) {
        await db.query(sql.unsafe`
          DELETE FROM settings WHERE user_id = ${OPERATOR_USER_ID} AND name = ${PUBLIC_ORIGIN_SETTING}`);
        return;
      }
      await db.query(sql.unsafe`
        INSERT INTO settings (user_id, name, value) VALUES (${OPERATOR_USER_ID}, ${PUBLIC_ORIGIN_SETTING}, ${sql.jsonb(origin)})
        ON CONFLICT (user_id, name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`);
    },
  };
}

export type SettingsQueries = ReturnType<typeof createSettingsQueries>;
