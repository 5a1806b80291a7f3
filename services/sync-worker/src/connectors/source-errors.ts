/**
 * What can go wrong talking to a source, as the connectors report it. Messages are written by the
 * gateway (never a provider's raw body or a URL with a credential), because they reach the Console,
 * the connection's `last_error` and agents. The queue consequences are decided in one place
 * (`sync/failure-policy.ts`, `live/live-runner.ts`).
 */
export class SourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** 5xx, a network failure, a timeout or an unreadable answer: try again later, with backoff. */
export class SourceUnavailableError extends SourceError {}

/** 429: the source asks us to wait `retryAfterMs`. */
export class SourceRateLimitedError extends SourceError {
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** 401/403: the credential was revoked or is wrong; only the operator can fix it (needs sign-in). */
export class SourceAuthError extends SourceError {}

/** Another 4xx: the source refused this particular request (an action it rejects, a read it will not serve). */
export class SourceRejectedError extends SourceError {
  readonly status: number;
  readonly detail: string;
  constructor(message: string, status: number, detail: string) {
    super(message);
    this.status = status;
    this.detail = detail;
  }
}

/** A live request the connector cannot serve as asked (unknown object, unsupported filter). */
export class LiveRequestError extends SourceError {}
