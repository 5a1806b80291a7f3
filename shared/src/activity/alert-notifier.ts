import { z } from 'zod';
import { OPERATOR_USER_ID, sql, type DatabasePool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import { AlertSchema, describeAlert, type Alert } from './alerts.ts';
import type { DestinationStore, NotifyDestination } from './notify-destination.ts';
import { createPeriodicPass } from './periodic-pass.ts';

/** How often the sync-worker looks for alerts to send. */
export const NOTIFY_EVERY_MS = 15_000;
/** Tries of one alert or digest before it is left unsent (its error kept on the row). */
export const NOTIFY_MAX_ATTEMPTS = 8;
/** Wait before try n+1: base × 2^(n-1), at most an hour. */
export const NOTIFY_BACKOFF_BASE_MS = 30_000;
const NOTIFY_BACKOFF_CAP_MS = 3_600_000;
const SEND_TIMEOUT_MS = 10_000;

export type AlertNotifierDeps = {
  db: DatabasePool;
  destinations: Pick<DestinationStore, 'open'>;
  /** The outbound fetch through the outbound policy for source addresses (`createOutboundFetch`). */
  fetch: typeof fetch;
  log: Logger;
  everyMs?: number;
  backoffBaseMs?: number;
};

export type Notification = { title: string; message: string; urgent: boolean; tags: string[] };

const ALERT_TAGS: Record<Alert['kind'], string[]> = {
  first_sector: ['new'],
  first_object: ['new'],
  refusal_burst: ['no_entry'],
  volume_spike: ['chart_with_upwards_trend'],
  needs_person: ['key'],
};

/** The request body each kind of destination takes. */
export function requestFor(destination: NotifyDestination, note: Notification): { url: string; body: unknown } {
  if (destination.kind === 'ntfy') {
    // ntfy's JSON publishing: POST to the server's root with the topic in the body.
    return { url: destination.root, body: { topic: destination.topic, title: note.title, message: note.message, priority: note.urgent ? 4 : 3, tags: note.tags } };
  }
  // The Apprise API's stateful notify: POST /notify/<key> with title, body and type.
  return { url: destination.url, body: { title: note.title, body: note.message, type: note.urgent ? 'warning' : 'info' } };
}

const DueAlertSchema = AlertSchema.extend({ attempts: z.number() });
const DigestDaySchema = z.object({ day: z.string(), attempts: z.number() });
const DigestCountsSchema = z.object({ calls: z.number(), denied: z.number(), alerts: z.number(), agents: z.number() });

/**
 * The sync-worker's sending of alerts and of a daily digest (design 8.5): off while no destination is saved;
 * only alerts raised after it was saved are sent; each try goes through the outbound policy and, when it fails,
 * waits longer before the next (`NOTIFY_BACKOFF_BASE_MS` doubling, up to `NOTIFY_MAX_ATTEMPTS`). Nothing here is
 * on a tool call's path. The digest of a UTC day is sent once after that day ends.
 */
export function createAlertNotifier({ db, destinations, fetch, log, everyMs = NOTIFY_EVERY_MS, backoffBaseMs = NOTIFY_BACKOFF_BASE_MS }: AlertNotifierDeps) {
  const backoffMs = (attempts: number) => Math.min(NOTIFY_BACKOFF_CAP_MS, backoffBaseMs * 2 ** Math.max(0, attempts - 1));

  async function send(destination: NotifyDestination, note: Notification): Promise<string | null> {
    const { url, body } = requestFor(destination, note);
    try {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(SEND_TIMEOUT_MS), redirect: 'manual' });
      await response.arrayBuffer().catch(() => undefined);
      return response.ok ? null : `the destination answered ${response.status}`;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  async function sendAlerts(destination: NotifyDestination, savedAt: string, stopped: () => boolean): Promise<void> {
    const due = await db.any(sql.type(DueAlertSchema)`
      SELECT id::text, kind, agent_id AS agent, sector, object, connection_id::text AS "connectionId", detail,
             to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "occurredAt", state, notify_attempts AS attempts
      FROM activity_alerts
      WHERE user_id = ${OPERATOR_USER_ID} AND notified_at IS NULL AND created_at >= ${savedAt}::timestamptz
        AND notify_attempts < ${NOTIFY_MAX_ATTEMPTS}::int AND (notify_next_at IS NULL OR notify_next_at <= now())
      ORDER BY id LIMIT 50`);
    for (const alert of due) {
      if (stopped()) return;
      const failure = await send(destination, { title: 'Personal Context Gateway alert', message: describeAlert(alert), urgent: alert.kind === 'refusal_burst' || alert.kind === 'needs_person', tags: ALERT_TAGS[alert.kind] });
      if (failure === null) {
        await db.query(sql.unsafe`UPDATE activity_alerts SET notified_at = now(), notify_attempts = notify_attempts + 1, notify_error = NULL WHERE id = ${alert.id}::bigint`);
      } else {
        log.warn({ alert: alert.id, attempt: alert.attempts + 1 }, `[alerts] sending failed: ${failure}`);
        await db.query(sql.unsafe`
          UPDATE activity_alerts SET notify_attempts = notify_attempts + 1, notify_error = ${failure},
                 notify_next_at = now() + make_interval(secs => ${backoffMs(alert.attempts + 1) / 1000}::float8)
          WHERE id = ${alert.id}::bigint`);
      }
    }
  }

  /** Yesterday's digest (UTC), once, if the destination was saved before yesterday ended. */
  async function sendDigest(destination: NotifyDestination, savedAt: string): Promise<void> {
    await db.query(sql.unsafe`
      INSERT INTO alert_digests (day) SELECT (now() AT TIME ZONE 'UTC')::date - 1
      WHERE ${savedAt}::timestamptz < ((now() AT TIME ZONE 'UTC')::date)::timestamp AT TIME ZONE 'UTC'
      ON CONFLICT (day) DO NOTHING`);
    const due = await db.maybeOne(sql.type(DigestDaySchema)`
      SELECT to_char(day, 'YYYY-MM-DD') AS day, attempts FROM alert_digests
      WHERE sent_at IS NULL AND attempts < ${NOTIFY_MAX_ATTEMPTS}::int AND (next_at IS NULL OR next_at <= now())
      ORDER BY day DESC LIMIT 1`);
    if (!due) return;
    const counts = await db.one(sql.type(DigestCountsSchema)`
      SELECT coalesce((SELECT sum(calls) FROM activity_daily WHERE user_id = ${OPERATOR_USER_ID} AND day = ${due.day}::date AND agent_id IS NOT NULL AND agent_id <> 'operator'), 0)::int8 AS calls,
             coalesce((SELECT sum(calls) FROM activity_daily WHERE user_id = ${OPERATOR_USER_ID} AND day = ${due.day}::date AND agent_id IS NOT NULL AND agent_id <> 'operator' AND decision = 'deny'), 0)::int8 AS denied,
             (SELECT count(DISTINCT agent_id) FROM activity_daily WHERE user_id = ${OPERATOR_USER_ID} AND day = ${due.day}::date AND agent_id IS NOT NULL AND agent_id <> 'operator')::int8 AS agents,
             (SELECT count(*) FROM activity_alerts WHERE user_id = ${OPERATOR_USER_ID} AND (occurred_at AT TIME ZONE 'UTC')::date = ${due.day}::date)::int8 AS alerts`);
    const failure = await send(destination, {
      title: `Personal Context Gateway: ${due.day}`,
      message: `${due.day} (UTC): ${counts.calls} agent calls by ${counts.agents} agents, ${counts.denied} refused; ${counts.alerts} alerts.`,
      urgent: false,
      tags: ['calendar'],
    });
    if (failure === null) await db.query(sql.unsafe`UPDATE alert_digests SET sent_at = now(), attempts = attempts + 1, last_error = NULL WHERE day = ${due.day}::date`);
    else
      await db.query(sql.unsafe`
        UPDATE alert_digests SET attempts = attempts + 1, last_error = ${failure},
               next_at = now() + make_interval(secs => ${backoffMs(due.attempts + 1) / 1000}::float8)
        WHERE day = ${due.day}::date`);
  }

  async function pass(stopped: () => boolean): Promise<void> {
    const saved = await destinations.open();
    if (!saved) return;
    await sendAlerts(saved.destination, saved.savedAt, stopped);
    if (!stopped()) await sendDigest(saved.destination, saved.savedAt);
  }

  return createPeriodicPass({ pass, everyMs, log, failedText: '[alerts] notification pass failed, will try again' });
}

export type AlertNotifier = ReturnType<typeof createAlertNotifier>;
