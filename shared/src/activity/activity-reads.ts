import { z } from 'zod';
import { OPERATOR_USER_ID, sql, type DatabasePool } from '../db/index.ts';
import { OPERATOR_AGENT } from './activity-rules.ts';

/** Days the activity screen shows, today (UTC) included. */
export const ACTIVITY_DAYS = 30;

export const DailyActivitySchema = z.object({
  day: z.string(),
  agent: z.string(),
  /** null: calls that touched no sector (describe_context and the like). */
  sector: z.string().nullable(),
  calls: z.number(),
  denied: z.number(),
});

export const SectorUseSchema = z.object({ agent: z.string(), sector: z.string(), firstAt: z.string(), lastAt: z.string(), calls: z.number() });
/** object null: the rows' args were cut to "[truncated]", so which object is unknown. */
export const ObjectUseSchema = SectorUseSchema.extend({ object: z.string().nullable() });

export const ConnectionFreshnessSchema = z.object({
  id: z.string(),
  displayName: z.string(),
  provider: z.string(),
  sector: z.string(),
  status: z.string(),
  lastSyncedAt: z.string().nullable(),
  /** null: no schedule of its own (push-ingest, or pulled only on demand). */
  intervalMinutes: z.number().nullable(),
  /** Minutes since the last sync; null when never synced. */
  ageMinutes: z.number().nullable(),
  /** True when synced within its interval; null when it has no interval. */
  fresh: z.boolean().nullable(),
});

export const ActivityViewSchema = z.object({
  days: z.array(z.string()),
  daily: z.array(DailyActivitySchema),
  sectorUses: z.array(SectorUseSchema),
  objectUses: z.array(ObjectUseSchema),
  connections: z.array(ConnectionFreshnessSchema),
});
export type ActivityView = z.infer<typeof ActivityViewSchema>;

/** Everything the activity screen draws, from the rollup tables and the connections (not from audit_log). */
export async function readActivity(db: DatabasePool, days = ACTIVITY_DAYS): Promise<ActivityView> {
  const dayList = await db.anyFirst(sql.type(z.object({ day: z.string() }))`
    SELECT to_char(d, 'YYYY-MM-DD') AS day
    FROM generate_series((now() AT TIME ZONE 'UTC')::date - ${days - 1}::int, (now() AT TIME ZONE 'UTC')::date, interval '1 day') d ORDER BY d`);
  const daily = await db.any(sql.type(DailyActivitySchema)`
    SELECT to_char(day, 'YYYY-MM-DD') AS day, agent_id AS agent, sector,
           sum(calls)::int8 AS calls, coalesce(sum(calls) FILTER (WHERE decision = 'deny'), 0)::int8 AS denied
    FROM activity_daily
    WHERE user_id = ${OPERATOR_USER_ID} AND day >= ${dayList[0] ?? '1970-01-01'}::date
      AND agent_id IS NOT NULL AND agent_id <> ${OPERATOR_AGENT}::text
    GROUP BY day, agent_id, sector ORDER BY day, agent_id, sector NULLS FIRST`);
  const sectorUses = await db.any(sql.type(SectorUseSchema)`
    SELECT agent_id AS agent, sector, ${iso('first_at')} AS "firstAt", ${iso('last_at')} AS "lastAt", calls
    FROM activity_sector_uses WHERE user_id = ${OPERATOR_USER_ID} ORDER BY agent_id, sector`);
  const objectUses = await db.any(sql.type(ObjectUseSchema)`
    SELECT agent_id AS agent, sector, object, ${iso('first_at')} AS "firstAt", ${iso('last_at')} AS "lastAt", calls
    FROM activity_object_uses WHERE user_id = ${OPERATOR_USER_ID} ORDER BY agent_id, sector, object NULLS LAST`);
  const connections = await db.any(sql.type(ConnectionFreshnessSchema)`
    SELECT id::text, display_name AS "displayName", provider, sector, status,
           ${iso('last_synced_at')} AS "lastSyncedAt", sync_interval_minutes AS "intervalMinutes",
           floor(extract(epoch FROM now() - last_synced_at) / 60)::int AS "ageMinutes",
           CASE WHEN sync_interval_minutes IS NULL THEN NULL
                ELSE coalesce(last_synced_at >= now() - make_interval(mins => sync_interval_minutes), false) END AS fresh
    FROM connections WHERE user_id = ${OPERATOR_USER_ID} ORDER BY sector, display_name, id`);
  return { days: [...dayList], daily: [...daily], sectorUses: [...sectorUses], objectUses: [...objectUses], connections: [...connections] };
}

function iso(column: string) {
  return sql.fragment`to_char(${sql.identifier([column])} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
