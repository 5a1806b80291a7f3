import { transientClassifier } from '../kit/classifiers.ts';
import type { SourceClassifier } from '../kit/source-verdict.ts';

/** RFC 6578's precondition for a stale sync token, in whichever 4xx a server chose (reference §8.4). */
const STALE_SYNC_TOKEN = /valid-sync-token/;

/**
 * iCloud's answers (reference §8): a stale sync token is a cursor to restart; 401 and 403 mean the
 * app-specific password was revoked or is wrong, which only a new one fixes (there is nothing to refresh);
 * 429, 408 and 5xx are transient; anything else refuses that one request.
 */
export const icloudClassifier: SourceClassifier = (answer) => {
  if (answer.status >= 400 && answer.status < 500 && STALE_SYNC_TOKEN.test(answer.text)) return { kind: 'cursor_expired' };
  if (answer.status === 401 || answer.status === 403) return { kind: 'needs_sign_in' };
  return transientClassifier(answer) ?? { kind: 'rejected' };
};
