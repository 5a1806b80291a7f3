import type { ConnectionRow } from './connections-types.ts';

/** A connection that has not synced for this long is stale (describe_context, the Console, /api/status). */
export const STALE_AFTER_MS = 24 * 60 * 60 * 1000;

/** One word for how a connection is doing: ok, pending (never synced), stale, error, paused or needs_sign_in. */
export type ConnectionHealth = 'ok' | 'pending' | 'stale' | 'error' | 'paused' | 'needs_sign_in';

export function connectionHealth(row: Pick<ConnectionRow, 'status' | 'last_error' | 'last_synced_at'>, now: Date | number): ConnectionHealth {
  if (row.status !== 'active') return row.status;
  if (row.last_error) return 'error';
  if (!row.last_synced_at) return 'pending';
  return new Date(now).getTime() - Date.parse(row.last_synced_at) > STALE_AFTER_MS ? 'stale' : 'ok';
}

/** Whole seconds since the last sync, or null before the first. */
export function dataAgeSeconds(row: Pick<ConnectionRow, 'last_synced_at'>, now: Date | number): number | null {
  if (row.last_synced_at === null) return null;
  return Math.max(0, Math.floor((new Date(now).getTime() - Date.parse(row.last_synced_at)) / 1000));
}
