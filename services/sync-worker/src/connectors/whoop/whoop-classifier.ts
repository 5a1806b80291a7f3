import { defaultClassifier } from '../kit/classifiers.ts';
import { readRetryAfter, type SourceClassifier } from '../kit/source-verdict.ts';

/**
 * WHOOP says when its window resets in `X-RateLimit-Reset` (seconds) rather than `Retry-After`
 * (reference §3.4); everything else is the default OAuth reading.
 */
export const whoopClassifier: SourceClassifier = (answer) => {
  if (answer.status === 429) {
    const reset = readRetryAfter(answer.headers.get('x-ratelimit-reset')) ?? readRetryAfter(answer.headers.get('retry-after'));
    if (reset !== undefined) return { kind: 'rate_limited', retryAfterMs: reset };
  }
  return defaultClassifier(answer);
};
