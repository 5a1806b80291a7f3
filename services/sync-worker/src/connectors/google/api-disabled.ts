import { errorReasons } from '../kit/error-bodies.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import type { SourceClassifier } from '../kit/source-verdict.ts';

/** A Google API as the operator finds it in the Cloud console's library. */
export type GoogleApiName = 'Gmail API' | 'Google Calendar API' | 'People API';

/**
 * Google's 403 for an API that is not enabled in the Cloud project of the app's client id: legacy
 * `errors[].reason` `accessNotConfigured`, AIP-193 `details[].reason` `SERVICE_DISABLED`
 * (`google/api/error_reason.proto`). The grant is fine; only the operator's project needs the API.
 */
const DISABLED_REASONS = new Set(['accessNotConfigured', 'SERVICE_DISABLED']);

export function apiDisabledMessage(api: GoogleApiName): string {
  return `Google refused the request because the ${api} is not enabled: enable the ${api} for this Google Cloud project (the project of the app's client id, under APIs & Services), then sync again; no new sign-in is needed`;
}

/**
 * Runs one request with a classifier that spots that 403 first, and turns it into a rejection naming the
 * API to enable (retried, then shown as the connection's error), never a sign-in the person cannot fix.
 */
export async function withApiEnabled<T>(api: GoogleApiName, request: (classify: SourceClassifier) => Promise<T>): Promise<T> {
  let disabled = false;
  const classify: SourceClassifier = (answer) => {
    if (answer.status !== 403 || !errorReasons(answer.text).some((reason) => DISABLED_REASONS.has(reason))) return undefined;
    disabled = true;
    return { kind: 'rejected' };
  };
  try {
    return await request(classify);
  } catch (error) {
    if (disabled) throw new SourceRejectedError(apiDisabledMessage(api), 403, 'SERVICE_DISABLED');
    throw error;
  }
}
