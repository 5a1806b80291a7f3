import { transientClassifier } from '../kit/classifiers.ts';
import type { SourceClassifier } from '../kit/source-verdict.ts';

/**
 * The bridge's answers by status (reference §2.2): 403 means the access was revoked or the credentials
 * are wrong, 402 that the bridge wants payment; neither mends itself, so both need the operator (a new
 * setup token, or a renewed subscription). 429, 408 and 5xx are transient; anything else is refused.
 */
export const simplefinClassifier: SourceClassifier = (answer) => {
  if (answer.status === 402 || answer.status === 403) return { kind: 'needs_sign_in' };
  return transientClassifier(answer) ?? { kind: 'rejected' };
};

/** What the connection says for each (spec 2.1: health with the reason). */
export const BRIDGE_PAYMENT_REQUIRED = 'the bridge asks for payment (HTTP 402): renew the subscription at the bridge, then sync again';
export const BRIDGE_ACCESS_REVOKED = 'the bridge refused the access (HTTP 403): it was revoked or is no longer valid; claim a new setup token';
