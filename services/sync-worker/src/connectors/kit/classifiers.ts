import { errorReasons } from './error-bodies.ts';
import { parseRetryAfter, readRetryAfter, type SourceClassifier, type SourceVerdict } from './source-verdict.ts';

/** Reasons that mean the grant is gone: only a new sign-in helps (Plaid, OAuth token endpoints). */
const SIGN_IN_REASONS = new Set(['ITEM_LOGIN_REQUIRED', 'invalid_grant', 'USER_PERMISSION_REVOKED', 'ACCESS_NOT_GRANTED', 'INVALID_ACCESS_TOKEN']);
/** Quota and throttling reasons, whatever the status (Gmail and Calendar send some as 403). */
const RATE_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'quotaExceeded', 'dailyLimitExceeded', 'RATE_LIMIT_EXCEEDED', 'RESOURCE_EXHAUSTED', 'ApplicationThrottled']);
/** The incremental cursor is gone (Calendar `fullSyncRequired`, People `EXPIRED_SYNC_TOKEN`, Graph's sync state). */
const CURSOR_REASONS = new Set(['fullSyncRequired', 'EXPIRED_SYNC_TOKEN', 'SyncStateNotFound', 'SyncStateInvalid', 'resyncRequired']);
/** The operator's Cloud project lacks the API (Google `accessNotConfigured`, `SERVICE_DISABLED`): the grant is fine, a sign-in cannot help. */
const SETUP_REASONS = new Set(['accessNotConfigured', 'SERVICE_DISABLED']);
/** RFC 6578's precondition for a stale WebDAV sync-token, in whichever status a server chose. */
const DAV_SYNC_TOKEN = /valid-sync-token/;

/** 429, 408 and 5xx by status, with `Retry-After` when given; the part every classifier shares. */
export const transientClassifier: SourceClassifier = ({ status, headers }) => {
  if (status === 429) return { kind: 'rate_limited', retryAfterMs: parseRetryAfter(headers.get('retry-after')) };
  if (status === 408 || status >= 500) {
    const retryAfterMs = readRetryAfter(headers.get('retry-after'));
    return retryAfterMs === undefined ? { kind: 'retry_later' } : { kind: 'retry_later', retryAfterMs };
  }
  return undefined;
};

/**
 * The classifier for OAuth-style sources, reading the error bodies of reference/providers.md first and
 * the status after: a reason that says sign-in, quota or cursor wins over the status (Gmail's 403
 * `rateLimitExceeded` is rate limited, Plaid's 400 `ITEM_LOGIN_REQUIRED` needs sign-in); then 401 →
 * refresh the token, 403 → needs sign-in, 410 → cursor expired, 429/408/5xx as `transientClassifier`,
 * any other status → rejected.
 */
export const defaultClassifier: SourceClassifier = (answer) => {
  const reasons = errorReasons(answer.text);
  if (reasons.some((reason) => SETUP_REASONS.has(reason))) return { kind: 'rejected' };
  if (reasons.some((reason) => SIGN_IN_REASONS.has(reason))) return { kind: 'needs_sign_in' };
  if (reasons.some((reason) => RATE_REASONS.has(reason))) return { kind: 'rate_limited', retryAfterMs: parseRetryAfter(answer.headers.get('retry-after')) };
  if (reasons.some((reason) => CURSOR_REASONS.has(reason)) || (answer.status < 500 && DAV_SYNC_TOKEN.test(answer.text))) return { kind: 'cursor_expired' };
  const transient = transientClassifier(answer);
  if (transient) return transient;
  const byStatus: Record<number, SourceVerdict> = {
    401: { kind: 'refresh_token' },
    403: { kind: 'needs_sign_in' },
    410: { kind: 'cursor_expired' },
  };
  return byStatus[answer.status] ?? { kind: 'rejected' };
};

/** A classifier for one request that reads a status as a given verdict (Gmail's 404 on `history.list` is a stale cursor). */
export function statusMeans(status: number, verdict: SourceVerdict): SourceClassifier {
  return (answer) => (answer.status === status ? verdict : undefined);
}
