import { randomBytes } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { OPERATOR_USER_ID } from './operator-user.ts';

/**
 * A server-side secret kept in `settings` (32 random bytes, created on first use), so that every
 * process and every restart signs alike: the gateway, the console and a second gateway instance
 * accept each other's cursors. Concurrent first uses agree on one value (ON CONFLICT DO NOTHING).
 */
export async function loadOrCreateSecret(db: DatabasePool, name: string): Promise<Buffer> {
  const candidate = randomBytes(32).toString('base64');
  const stored = await db.oneFirst(sql.type(z.object({ value: z.string() }))`
    WITH inserted AS (
      INSERT INTO settings (user_id, name, value) VALUES (${OPERATOR_USER_ID}, ${name}, ${sql.jsonb(candidate)})
      ON CONFLICT (user_id, name) DO NOTHING
      RETURNING value
    )
    SELECT value #>> '{}' AS value FROM inserted
    UNION ALL
    SELECT value #>> '{}' AS value FROM settings WHERE user_id = ${OPERATOR_USER_ID} AND name = ${name}
    LIMIT 1`);
  return Buffer.from(stored, 'base64');
}
