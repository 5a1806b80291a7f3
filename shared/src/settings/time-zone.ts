import type { CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { createConnectionQueries } from '../connections/index.ts';
import { sql } from '../db/index.ts';
import { OPERATOR_USER_ID } from '../grants/grants-types.ts';
import { TIME_ZONE_SETTING } from './settings-types.ts';

/**
 * Where the person's time zone came from: the operator's setting; else the zone a connected home hub is set
 * to (it lives where the person lives); else the machine's.
 */
export type TimeZoneSource = 'setting' | 'hub' | 'machine';
export type PersonTimeZone = { zone: string; source: TimeZoneSource };

export const TIME_ZONE_RULES = {
  notAZone: (input: string) =>
    `timeZone must be an IANA time zone name such as "Europe/Berlin" or "America/New_York" (not an offset or an abbreviation); "${input.slice(0, 64)}" is not one; send null to use the home hub's zone when one is connected, else the machine's`,
} as const;

/** The IANA name of a zone Intl knows, in its canonical spelling, or undefined. Offsets are refused. */
export function canonicalTimeZone(input: string): string | undefined {
  if (input.length === 0 || input.length > 64 || !/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(input)) return undefined;
  let zone: string;
  try {
    zone = new Intl.DateTimeFormat('en-US', { timeZone: input }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
  return zone === 'UTC' || Intl.supportedValuesOf('timeZone').includes(zone) ? zone : undefined;
}

/** The machine's zone (honours `TZ`); UTC when it names none Intl accepts. */
export function machineTimeZone(): string {
  return canonicalTimeZone(Intl.DateTimeFormat().resolvedOptions().timeZone) ?? 'UTC';
}

const StoredZoneSchema = z.object({ value: z.string() });

/** SQL for the time-zone row of `settings` (its value is a JSON string). */
export function createTimeZoneQueries(db: CommonQueryMethods) {
  return {
    async readSaved(): Promise<string | null> {
      return db.maybeOneFirst(sql.type(StoredZoneSchema)`
        SELECT value FROM settings WHERE user_id = ${OPERATOR_USER_ID} AND name = ${TIME_ZONE_SETTING}`);
    },
    async write(zone: string | null): Promise<void> {
      if (zone === null) {
        await db.query(sql.unsafe`DELETE FROM settings WHERE user_id = ${OPERATOR_USER_ID} AND name = ${TIME_ZONE_SETTING}`);
        return;
      }
      await db.query(sql.unsafe`
        INSERT INTO settings (user_id, name, value) VALUES (${OPERATOR_USER_ID}, ${TIME_ZONE_SETTING}, ${sql.jsonb(zone)})
        ON CONFLICT (user_id, name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`);
    },
  };
}

/**
 * The person's time zone as every read uses it: the saved setting, else the zone of a connected home hub,
 * else the machine's. A stored value that no longer names a zone (a hand edit, a zone a newer hub knows
 * and this runtime does not) is passed over rather than failing reads.
 */
export function createTimeZoneReader(db: CommonQueryMethods, machine: () => string = machineTimeZone) {
  const queries = createTimeZoneQueries(db);
  const connections = createConnectionQueries(db);
  const known = (stored: string | null) => (stored === null ? undefined : canonicalTimeZone(stored));
  return async (): Promise<PersonTimeZone> => {
    const saved = known(await queries.readSaved());
    if (saved) return { zone: saved, source: 'setting' };
    const hub = known(await connections.sourceTimeZone());
    return hub ? { zone: hub, source: 'hub' } : { zone: machine(), source: 'machine' };
  };
}
