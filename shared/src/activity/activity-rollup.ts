import { z } from 'zod';
import { OPERATOR_USER_ID, sql, type DatabasePool } from '../db/index.ts';
import {
  OPERATOR_AGENT,
  REFUSAL_BURST_COUNT,
  REFUSAL_BURST_MINUTES,
  VOLUME_BASELINE_DAYS,
  VOLUME_SPIKE_FACTOR,
  VOLUME_SPIKE_MIN_CALLS,
} from './activity-rules.ts';

type Transaction = Parameters<Parameters<DatabasePool['transaction']>[0]>[0];

/** Rows taken from audit_log per transaction; a backfill of millions of rows is many such passes. */
export const ACTIVITY_BATCH_SIZE = 50_000;

/** One advisory lock key for the whole derivation, so two audit-writers never count a row twice. */
const ACTIVITY_LOCK_KEY = 4_117_041;

export type RollupPass = {
  /** False when another process held the lock; nothing was done. */
  ran: boolean;
  /** audit_log rows counted in this pass. */
  rows: number;
};

const BatchSchema = z.object({ rows: z.number(), alerting: z.boolean() });
const UserId = OPERATOR_USER_ID;
const agentUse = sql.fragment`agent_id IS NOT NULL AND agent_id <> ${OPERATOR_AGENT}::text`;

/**
 * Counts the next audit rows after the progress mark into the rollup tables and derives the alerts those
 * rows raise, in one transaction with the mark's move, so a pass that fails counts nothing and a pass that
 * runs twice counts each row once. On the very first pass the mark starts before the oldest row and the
 * newest existing row becomes the baseline: rows up to it are counted but raise no alert (issue 41).
 * Rows are read with the one index of audit_log (user_id, created_at) in (created_at, id) order, the order
 * the writer commits them in.
 */
export async function rollUpActivityOnce(db: DatabasePool, batchSize = ACTIVITY_BATCH_SIZE): Promise<RollupPass> {
  return db.transaction(async (tx) => {
    const locked = await tx.oneFirst(sql.type(z.object({ locked: z.boolean() }))`SELECT pg_try_advisory_xact_lock(${ACTIVITY_LOCK_KEY}) AS locked`);
    if (!locked) return { ran: false, rows: 0 };
    await startProgress(tx);
    const batch = await takeBatch(tx, batchSize);
    if (batch.rows === 0) return { ran: true, rows: 0 };
    await addDailyCounts(tx);
    await addUses(tx);
    if (batch.alerting) {
      await raiseRefusalBursts(tx);
      await raiseVolumeSpikes(tx);
    }
    await tx.query(sql.unsafe`
      UPDATE activity_progress p SET (last_created_at, last_id, updated_at) = (b.created_at, b.id, now())
      FROM (SELECT created_at, id FROM activity_batch ORDER BY created_at DESC, id DESC LIMIT 1) b
      WHERE p.user_id = ${UserId}`);
    return { ran: true, rows: batch.rows };
  });
}

/** The first pass ever: the baseline is the newest row that exists now (null when the record is empty). */
async function startProgress(tx: Transaction): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO activity_progress (user_id, baseline_created_at, baseline_id)
    SELECT ${UserId}, newest.created_at, newest.id
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (SELECT created_at, id FROM audit_log WHERE user_id = ${UserId} ORDER BY created_at DESC, id DESC LIMIT 1) newest ON true
    ON CONFLICT (user_id) DO NOTHING`);
}

async function takeBatch(tx: Transaction, batchSize: number): Promise<z.infer<typeof BatchSchema>> {
  await tx.query(sql.unsafe`
    CREATE TEMP TABLE activity_batch ON COMMIT DROP AS
    SELECT a.id, a.created_at, a.agent_id, a.sector, a.tool, a.decision,
           (jsonb_typeof(a.args) = 'string' AND a.args #>> '{}' = '[truncated]') AS truncated,
           CASE WHEN jsonb_typeof(a.args) = 'object' AND jsonb_typeof(a.args -> 'object') = 'string' THEN a.args ->> 'object' END AS object,
           (p.baseline_created_at IS NULL OR (a.created_at, a.id) > (p.baseline_created_at, p.baseline_id)) AS alerting
    FROM activity_progress p
    -- Lateral, so that the mark bounds the index scan itself (a join filter would walk the index from its start).
    CROSS JOIN LATERAL (
      SELECT * FROM audit_log a
      WHERE a.user_id = p.user_id
        AND a.created_at >= coalesce(p.last_created_at, '-infinity'::timestamptz)
        AND (p.last_created_at IS NULL OR (a.created_at, a.id) > (p.last_created_at, p.last_id))
      ORDER BY a.created_at, a.id
      LIMIT ${batchSize}::int
    ) a
    WHERE p.user_id = ${UserId}`);
  return tx.one(sql.type(BatchSchema)`SELECT count(*)::int AS rows, coalesce(bool_or(alerting), false) AS alerting FROM activity_batch`);
}

async function addDailyCounts(tx: Transaction): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO activity_daily (user_id, day, agent_id, sector, tool, decision, calls)
    SELECT ${UserId}, (created_at AT TIME ZONE 'UTC')::date, agent_id, sector, tool, decision, count(*)
    FROM activity_batch GROUP BY 2, 3, 4, 5, 6
    ON CONFLICT ON CONSTRAINT activity_daily_key DO UPDATE SET calls = activity_daily.calls + EXCLUDED.calls`);
}

/**
 * First and last allowed use per agent x sector and per agent x object; a pair seen for the first time after
 * the baseline is an alert (an object only when known: a row cut to "[truncated]" names none).
 */
async function addUses(tx: Transaction): Promise<void> {
  const used = sql.fragment`decision = 'allow' AND ${agentUse} AND sector IS NOT NULL`;
  await tx.query(sql.unsafe`
    WITH counted AS (
      INSERT INTO activity_sector_uses AS u (user_id, agent_id, sector, first_at, last_at, calls)
      SELECT ${UserId}, agent_id, sector, min(created_at), max(created_at), count(*)
      FROM activity_batch WHERE ${used} GROUP BY agent_id, sector
      ON CONFLICT (user_id, agent_id, sector) DO UPDATE
        SET first_at = least(u.first_at, EXCLUDED.first_at), last_at = greatest(u.last_at, EXCLUDED.last_at), calls = u.calls + EXCLUDED.calls
      RETURNING agent_id, sector, first_at, (xmax = 0) AS inserted
    )
    INSERT INTO activity_alerts (user_id, kind, agent_id, sector, occurred_at, dedupe_key)
    SELECT ${UserId}, 'first_sector', c.agent_id, c.sector, c.first_at, jsonb_build_array('first_sector', c.agent_id, c.sector)::text
    FROM counted c
    WHERE c.inserted
      AND EXISTS (SELECT 1 FROM activity_batch b WHERE b.alerting AND b.agent_id = c.agent_id AND b.sector = c.sector AND b.created_at = c.first_at)
    ON CONFLICT DO NOTHING`);
  await tx.query(sql.unsafe`
    WITH counted AS (
      INSERT INTO activity_object_uses AS u (user_id, agent_id, sector, object, first_at, last_at, calls)
      SELECT ${UserId}, agent_id, sector, CASE WHEN truncated THEN NULL ELSE object END, min(created_at), max(created_at), count(*)
      FROM activity_batch WHERE ${used} AND (truncated OR object IS NOT NULL) GROUP BY agent_id, sector, 4
      ON CONFLICT ON CONSTRAINT activity_object_uses_key DO UPDATE
        SET first_at = least(u.first_at, EXCLUDED.first_at), last_at = greatest(u.last_at, EXCLUDED.last_at), calls = u.calls + EXCLUDED.calls
      RETURNING agent_id, sector, object, first_at, (xmax = 0) AS inserted
    )
    INSERT INTO activity_alerts (user_id, kind, agent_id, sector, object, occurred_at, dedupe_key)
    SELECT ${UserId}, 'first_object', c.agent_id, c.sector, c.object, c.first_at, jsonb_build_array('first_object', c.agent_id, c.sector, c.object)::text
    FROM counted c
    WHERE c.inserted AND c.object IS NOT NULL
      AND EXISTS (SELECT 1 FROM activity_batch b WHERE b.alerting AND b.agent_id = c.agent_id AND b.object = c.object AND NOT b.truncated AND b.created_at = c.first_at)
    ON CONFLICT DO NOTHING`);
}

/**
 * The first deny of this batch (after the baseline) that makes `REFUSAL_BURST_COUNT` denies by its agent within
 * `REFUSAL_BURST_MINUTES`, counting denies before the batch too; none when that agent's last burst alert is
 * within the window.
 */
async function raiseRefusalBursts(tx: Transaction): Promise<void> {
  const window = sql.fragment`make_interval(mins => ${REFUSAL_BURST_MINUTES}::int)`;
  await tx.query(sql.unsafe`
    WITH span AS (SELECT min(created_at) AS first, max(created_at) AS last FROM activity_batch WHERE alerting AND decision = 'deny'),
    denies AS (
      -- Lateral, so that the span bounds the index scan of audit_log rather than filtering a scan of all of it.
      SELECT w.agent_id, w.created_at, w.n
      FROM span CROSS JOIN LATERAL (
        SELECT a.agent_id, a.created_at,
               count(*) OVER (PARTITION BY a.agent_id ORDER BY a.created_at RANGE BETWEEN ${window} PRECEDING AND CURRENT ROW) AS n
        FROM audit_log a
        WHERE a.user_id = ${UserId} AND a.created_at >= span.first - ${window} AND a.created_at <= span.last
          AND a.decision = 'deny' AND a.agent_id IS NOT NULL
      ) w
    ),
    hits AS (
      SELECT DISTINCT ON (d.agent_id) d.agent_id, d.created_at, d.n
      FROM denies d, span
      WHERE d.n >= ${REFUSAL_BURST_COUNT}::int AND d.created_at >= span.first
        AND EXISTS (SELECT 1 FROM activity_batch b WHERE b.alerting AND b.decision = 'deny' AND b.agent_id = d.agent_id AND b.created_at = d.created_at)
      ORDER BY d.agent_id, d.created_at
    )
    INSERT INTO activity_alerts (user_id, kind, agent_id, detail, occurred_at, dedupe_key)
    SELECT ${UserId}, 'refusal_burst', h.agent_id, jsonb_build_object('denies', h.n, 'minutes', ${REFUSAL_BURST_MINUTES}::int), h.created_at,
           jsonb_build_array('refusal_burst', h.agent_id, h.created_at)::text
    FROM hits h
    WHERE NOT EXISTS (
      SELECT 1 FROM activity_alerts x
      WHERE x.user_id = ${UserId} AND x.kind = 'refusal_burst' AND x.agent_id = h.agent_id AND x.occurred_at > h.created_at - ${window})
    ON CONFLICT DO NOTHING`);
}

/** Each agent x UTC day this batch touched (after the baseline), against the median of its earlier active days. */
async function raiseVolumeSpikes(tx: Transaction): Promise<void> {
  await tx.query(sql.unsafe`
    WITH touched AS (
      SELECT agent_id, (created_at AT TIME ZONE 'UTC')::date AS day, max(created_at) AS at
      FROM activity_batch WHERE alerting AND ${agentUse} GROUP BY 1, 2
    ),
    measured AS (
      SELECT t.agent_id, t.day, t.at,
        (SELECT sum(d.calls) FROM activity_daily d WHERE d.user_id = ${UserId} AND d.day = t.day AND d.agent_id = t.agent_id) AS calls,
        (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY p.calls) FROM (
           SELECT sum(d.calls) AS calls FROM activity_daily d
           WHERE d.user_id = ${UserId} AND d.day < t.day AND d.agent_id = t.agent_id
           GROUP BY d.day ORDER BY d.day DESC LIMIT ${VOLUME_BASELINE_DAYS}::int) p) AS usual
      FROM touched t
    )
    INSERT INTO activity_alerts (user_id, kind, agent_id, detail, occurred_at, dedupe_key)
    SELECT ${UserId}, 'volume_spike', m.agent_id, jsonb_build_object('day', m.day, 'calls', m.calls, 'usual', m.usual), m.at,
           jsonb_build_array('volume_spike', m.agent_id, m.day)::text
    FROM measured m
    WHERE m.usual IS NOT NULL AND m.calls >= ${VOLUME_SPIKE_MIN_CALLS}::int AND m.calls > ${VOLUME_SPIKE_FACTOR}::int * m.usual
    ON CONFLICT DO NOTHING`);
}
