import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';

/**
 * A position in the ledger's order (created_at DESC, id DESC). `createdAt` keeps the microseconds
 * Postgres stores: the wire's millisecond `created_at` would be too coarse to page exactly.
 */
export type AuditCursorPosition = { createdAt: string; id: string };

const PositionSchema = z.object({
  t: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
  i: z.string().regex(/^[1-9]\d{0,18}$/),
});

export type AuditCursorCodec = {
  encode(position: AuditCursorPosition): string;
  /** The position, or null for anything that is not a cursor this key issued, byte for byte. */
  decode(cursor: string): AuditCursorPosition | null;
};

const SIGNING_CONTEXT = 'pcg-audit-cursor.v1.';

/**
 * Opaque, tamper-evident cursors: `<base64url payload>.<base64url HMAC-SHA256 of the payload text>`.
 * The MAC covers the payload exactly as sent and the signature is compared as text, so changing any
 * one character (even one that base64 decoding would ignore) is refused.
 */
export function createAuditCursorCodec(key: Buffer): AuditCursorCodec {
  const sign = (payload: string) => createHmac('sha256', key).update(SIGNING_CONTEXT + payload).digest('base64url');
  return {
    encode({ createdAt, id }) {
      const payload = Buffer.from(JSON.stringify({ t: createdAt, i: id })).toString('base64url');
      return `${payload}.${sign(payload)}`;
    },
    decode(cursor) {
      const parts = cursor.split('.');
      if (parts.length !== 2) return null;
      const [payload = '', signature = ''] = parts;
      const expected = Buffer.from(sign(payload));
      const given = Buffer.from(signature);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      try {
        const parsed = PositionSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
        return parsed.success ? { createdAt: parsed.data.t, id: parsed.data.i } : null;
      } catch {
        return null;
      }
    },
  };
}

/** The settings row holding the cursor key; not an operator setting, never served. */
export const AUDIT_CURSOR_KEY_SETTING = 'audit_cursor_key';

/**
 * The cursor signing key, generated once and kept in `settings`, so that cursors survive a Console
 * restart and are accepted by every Console instance. Two first starts race safely: the first insert
 * wins and both read its key.
 */
export async function loadAuditCursorKey(db: DatabasePool, userId: number): Promise<Buffer> {
  const fresh = randomBytes(32).toString('base64');
  await db.query(sql.unsafe`
    INSERT INTO settings (user_id, name, value)
    VALUES (${userId}, ${AUDIT_CURSOR_KEY_SETTING}, to_jsonb(${fresh}::text))
    ON CONFLICT (user_id, name) DO NOTHING`);
  const stored = await db.oneFirst(sql.type(z.object({ key: z.string().min(40) }))`
    SELECT value #>> '{}' AS key FROM settings WHERE user_id = ${userId} AND name = ${AUDIT_CURSOR_KEY_SETTING}`);
  return Buffer.from(stored, 'base64');
}
