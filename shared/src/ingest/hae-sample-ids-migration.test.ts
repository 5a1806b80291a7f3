import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useMigrationDatabase } from '@pcg/testkit/testing';
import { createDatabase } from '../db/index.ts';
import { recordsFromHae } from './hae-format.ts';

const MIGRATION = '1795300020310_hae-sample-ids.sql';
const Row = z.object({ id: z.string(), connection_id: z.string(), source_id: z.string(), metric: z.string(), value: z.number(), device: z.string().nullable() });

describe('the Health Auto Export sample ids migration', () => {
  const scratch = useMigrationDatabase();

  it('re-keys samples and aggregated nights written with their source in the id, keeping the newest of each, and leaves canonical records and segment sessions alone', async () => {
    expect(await scratch.migrateBefore(MIGRATION)).toBeGreaterThan(0);
    const database = await createDatabase(scratch.url, { maximumPoolSize: 1 });
    const db = database.pool;
    try {
      const phone = randomUUID();
      const other = randomUUID();
      await db.query(sql.unsafe`INSERT INTO connections (id, user_id, provider, sector) VALUES (${phone}::uuid, 1, 'health-auto-export', 'health'), (${other}::uuid, 1, 'health-auto-export', 'health')`);
      const at = '2026-03-09T08:00:00.000Z';
      const insert = (connection: string, sourceId: string, metric: string, value: number, device: string | null, syncedAt: string, startAt: string | null = at) =>
        db.one(sql.type(z.object({ id: z.string() }))`
          INSERT INTO health_samples (connection_id, source, source_id, metric, value, unit, start_at, device, synced_at)
          VALUES (${connection}::uuid, 'health-auto-export', ${sourceId}, ${metric}, ${value}, 'count', ${startAt}::timestamptz, ${device}, ${syncedAt}::timestamptz)
          RETURNING id`);
      // The same bucket pushed twice as the old code keyed it: first from the phone, then with the watch's steps merged in.
      await insert(phone, `step_count|${at}|iPhone`, 'step_count', 40, 'iPhone', '2026-03-09T09:00:00Z');
      const newest = await insert(phone, `step_count|${at}|iPhone|Apple Watch`, 'step_count', 55, 'iPhone|Apple Watch', '2026-03-09T12:00:00Z');
      const noSource = await insert(phone, `heart_rate|${at}|`, 'heart_rate', 58, null, '2026-03-09T09:00:00Z');
      // The same bucket on another phone is another row; a canonical record keeps the id its sender chose.
      const elsewhere = await insert(other, `step_count|${at}|iPhone`, 'step_count', 12, 'iPhone', '2026-03-09T09:00:00Z');
      const canonical = await insert(phone, 'scale|2026-03-01', 'body_mass', 71, 'scale', '2026-03-09T09:00:00Z', '2026-03-01T07:00:00Z');

      const night = (sourceId: string, syncedAt: string, asleep: number) =>
        db.one(sql.type(z.object({ id: z.string() }))`
          INSERT INTO health_sleep_sessions (connection_id, source, source_id, start_at, end_at, asleep_s, synced_at)
          VALUES (${phone}::uuid, 'health-auto-export', ${sourceId}, '2026-03-08T22:00:00Z', '2026-03-09T06:00:00Z', ${asleep}, ${syncedAt}::timestamptz)
          RETURNING id`);
      await night('sleep|2026-03-09|Apple Watch', '2026-03-09T09:00:00Z', 25_000);
      const newestNight = await night('sleep|2026-03-09|Apple Watch|iPhone', '2026-03-09T12:00:00Z', 25_200);
      const segmented = await night('sleep|2026-03-08T22:00:00.000Z|Apple Watch', '2026-03-09T09:00:00Z', 24_000);

      await scratch.migrate(Infinity);

      const rows = await db.many(sql.type(Row)`
        SELECT id, connection_id::text, source_id, metric, value, device FROM health_samples ORDER BY connection_id = ${phone}::uuid DESC, source_id`);
      expect(rows).toEqual([
        { id: noSource.id, connection_id: phone, source_id: `heart_rate|${at}`, metric: 'heart_rate', value: 58, device: null },
        { id: canonical.id, connection_id: phone, source_id: 'scale|2026-03-01', metric: 'body_mass', value: 71, device: 'scale' },
        { id: newest.id, connection_id: phone, source_id: `step_count|${at}`, metric: 'step_count', value: 55, device: 'iPhone|Apple Watch' },
        { id: elsewhere.id, connection_id: other, source_id: `step_count|${at}`, metric: 'step_count', value: 12, device: 'iPhone' },
      ]);
      const nights = await db.many(sql.type(z.object({ id: z.string(), source_id: z.string(), asleep_s: z.number() }))`
        SELECT id, source_id, asleep_s FROM health_sleep_sessions ORDER BY source_id`);
      expect(nights).toEqual([
        { id: segmented.id, source_id: 'sleep|2026-03-08T22:00:00.000Z|Apple Watch', asleep_s: 24_000 },
        { id: newestNight.id, source_id: 'sleep|2026-03-09', asleep_s: 25_200 },
      ]);
      // The re-keyed id is the one a push of that bucket now carries, so the next push updates the row in place.
      const pushed = recordsFromHae({ data: { metrics: [{ name: 'step_count', units: 'count', data: [{ qty: 60, date: '2026-03-09 09:00:00 +0100', source: 'Apple Watch|iPhone' }] }] } });
      expect(pushed.samples.map((sample) => sample.source_id)).toEqual([`step_count|${at}`]);
    } finally {
      await database.end();
    }
  });
});
