import { z } from 'zod';
import { OPERATOR_USER_ID, sql, type DatabasePool } from '../db/index.ts';
import { ALERT_KINDS } from './activity-rules.ts';

export const AlertSchema = z.object({
  id: z.string(),
  kind: z.enum(ALERT_KINDS),
  agent: z.string().nullable(),
  sector: z.string().nullable(),
  object: z.string().nullable(),
  connectionId: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
  occurredAt: z.string(),
  state: z.enum(['new', 'seen']),
});
export type Alert = z.infer<typeof AlertSchema>;

/** An alert in words, for a notification. */
export function describeAlert(alert: Pick<Alert, 'kind' | 'agent' | 'sector' | 'object' | 'detail'>): string {
  const detail = alert.detail;
  switch (alert.kind) {
    case 'first_sector':
      return `${alert.agent} used ${alert.sector} for the first time`;
    case 'first_object':
      return `${alert.agent} read ${alert.object} (${alert.sector}) for the first time`;
    case 'refusal_burst':
      return `${alert.agent} was refused ${String(detail.denies)} times within ${String(detail.minutes)} minutes`;
    case 'volume_spike':
      return `${alert.agent} made ${String(detail.calls)} calls on ${String(detail.day)}, against a usual ${String(detail.usual)} a day`;
    case 'needs_person':
      return `The connection ${String(detail.displayName || detail.provider)} (${alert.sector}) needs you to sign in again`;
  }
}

/** An alert as the Console lists it: the stored alert and its words (the page shows these, as a notification does). */
export const AlertViewSchema = AlertSchema.extend({ text: z.string() });
export type AlertView = z.infer<typeof AlertViewSchema>;

export const alertView = (alert: Alert): AlertView => ({ ...alert, text: describeAlert(alert) });

/** Alerts listed at once, newest first. */
export const ALERTS_LISTED = 200;

const at = sql.fragment`to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The Console's alerts (design 8.5): list, count of new, mark seen. Marking one seen is not recorded. */
export function createAlertStore(db: DatabasePool) {
  return {
    list: async (): Promise<Alert[]> => [
      ...(await db.any(sql.type(AlertSchema)`
        SELECT id::text, kind, agent_id AS agent, sector, object, connection_id::text AS "connectionId", detail,
               ${at} AS "occurredAt", state
        FROM activity_alerts WHERE user_id = ${OPERATOR_USER_ID}
        ORDER BY occurred_at DESC, id DESC LIMIT ${ALERTS_LISTED}::int`)),
    ],
    countNew: (): Promise<number> =>
      db.oneFirst(sql.type(z.object({ count: z.number() }))`
        SELECT count(*)::int AS count FROM activity_alerts WHERE user_id = ${OPERATOR_USER_ID} AND state = 'new'`),
    /** False when there is no such alert. Marking a seen alert again changes nothing. */
    markSeen: async (id: string): Promise<boolean> => {
      const found = await db.maybeOne(sql.unsafe`
        UPDATE activity_alerts SET state = 'seen', seen_at = coalesce(seen_at, now())
        WHERE user_id = ${OPERATOR_USER_ID} AND id = ${id}::bigint RETURNING id`);
      return found !== null;
    },
    markAllSeen: async (): Promise<void> => {
      await db.query(sql.unsafe`
        UPDATE activity_alerts SET state = 'seen', seen_at = now() WHERE user_id = ${OPERATOR_USER_ID} AND state = 'new'`);
    },
  };
}

export type AlertStore = ReturnType<typeof createAlertStore>;
