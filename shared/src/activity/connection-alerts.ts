import { OPERATOR_USER_ID, sql, type DatabasePool } from '../db/index.ts';

/**
 * A connection that needs the person (status `needs_sign_in`: the source wants them to sign in again) raises
 * one alert each time it enters that status, compared with the status this pass saw last time. A connection
 * already waiting when alerts first ran raises one too: it still needs the person.
 */
export async function raiseConnectionAlerts(db: DatabasePool): Promise<void> {
  await db.query(sql.unsafe`
    WITH changed AS (
      SELECT c.id, c.status, c.sector, c.provider, c.display_name, c.last_error
      FROM connections c LEFT JOIN activity_connection_states s ON s.connection_id = c.id
      WHERE c.user_id = ${OPERATOR_USER_ID} AND s.status IS DISTINCT FROM c.status
    ),
    raised AS (
      INSERT INTO activity_alerts (user_id, kind, sector, connection_id, detail, occurred_at, dedupe_key)
      SELECT ${OPERATOR_USER_ID}, 'needs_person', sector, id,
             jsonb_build_object('displayName', display_name, 'provider', provider, 'lastError', last_error), now(),
             jsonb_build_array('needs_person', id, now())::text
      FROM changed WHERE status = 'needs_sign_in'
      ON CONFLICT DO NOTHING
    )
    INSERT INTO activity_connection_states (connection_id, status, changed_at)
    SELECT id, status, now() FROM changed
    ON CONFLICT (connection_id) DO UPDATE SET status = EXCLUDED.status, changed_at = EXCLUDED.changed_at`);
}
