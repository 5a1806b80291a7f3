import { transientClassifier } from '../kit/classifiers.ts';
import type { SourceClassifier } from '../kit/source-verdict.ts';

/**
 * The hub's answers by status (reference §9): its long-lived token cannot be refreshed, so a 401 or 403
 * needs a new sign-in; 429, 408 and 5xx are transient; any other status (400 for a bad service call,
 * 404 for an unknown entity) is a refusal of that one request.
 */
export const homeAssistantClassifier: SourceClassifier = (answer) => {
  if (answer.status === 401 || answer.status === 403) return { kind: 'needs_sign_in' };
  return transientClassifier(answer) ?? { kind: 'rejected' };
};
