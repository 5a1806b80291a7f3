import {
  SourceAuthError,
  SourceCursorExpiredError,
  SourceRateLimitedError,
  SourceRejectedError,
  SourceTokenExpiredError,
  SourceUnavailableError,
  type SourceError,
} from './source-errors.ts';

/** What a source's failed answer means for the gateway; each kind has one queue consequence. */
export type SourceVerdict =
  | { kind: 'retry_later'; retryAfterMs?: number }
  | { kind: 'rate_limited'; retryAfterMs: number }
  | { kind: 'refresh_token' }
  | { kind: 'needs_sign_in' }
  | { kind: 'cursor_expired' }
  | { kind: 'rejected' };

export type SourceVerdictKind = SourceVerdict['kind'];

/** A failed answer as the classifier sees it: the status, the headers and the body as text. */
export type SourceAnswer = {
  status: number;
  headers: Headers;
  text: string;
};

/**
 * A per-provider rule from a non-2xx answer to a verdict. Returns undefined to leave the answer to the
 * next classifier (see `chainClassifiers`); the last one of a chain must always answer.
 */
export type SourceClassifier = (answer: SourceAnswer) => SourceVerdict | undefined;

const MIN_RETRY_AFTER_MS = 1_000;
const MAX_RETRY_AFTER_MS = 3_600_000;
export const DEFAULT_RETRY_AFTER_MS = 60_000;

/** `Retry-After` as seconds or an HTTP date, clamped to 1 s … 1 h; absent or unreadable gives undefined. */
export function readRetryAfter(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, MIN_RETRY_AFTER_MS), MAX_RETRY_AFTER_MS);
}

/** `Retry-After` clamped to 1 s … 1 h; absent or unreadable gives 60 s. */
export function parseRetryAfter(header: string | null, now = Date.now()): number {
  return readRetryAfter(header, now) ?? DEFAULT_RETRY_AFTER_MS;
}

/** Tries each classifier in turn; the first verdict wins. */
export function chainClassifiers(...classifiers: SourceClassifier[]): SourceClassifier {
  return (answer) => {
    for (const classify of classifiers) {
      const verdict = classify(answer);
      if (verdict) return verdict;
    }
    return undefined;
  };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/** The error a verdict becomes; `what` names the source ("the hub"), `detail` is a short safe extract. */
export function errorForVerdict(verdict: SourceVerdict, what: string, status: number, detail: string): SourceError {
  switch (verdict.kind) {
    case 'retry_later':
      return new SourceUnavailableError(`${what} answered HTTP ${status}`, verdict.retryAfterMs);
    case 'rate_limited':
      return new SourceRateLimitedError(`${what} is rate limiting (HTTP ${status}); next try in ${seconds(verdict.retryAfterMs)}`, verdict.retryAfterMs);
    case 'refresh_token':
      return new SourceTokenExpiredError(`${what} refused the access token (HTTP ${status})`);
    case 'needs_sign_in':
      return new SourceAuthError(`${what} refused the credentials (HTTP ${status})`);
    case 'cursor_expired':
      return new SourceCursorExpiredError(`${what} no longer accepts the sync cursor (HTTP ${status})`);
    case 'rejected':
      return new SourceRejectedError(`${what} refused the request (HTTP ${status}: ${detail || `HTTP ${status}`})`, status, detail || `HTTP ${status}`);
  }
}
