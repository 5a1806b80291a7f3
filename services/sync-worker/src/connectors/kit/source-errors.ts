/**
 * What can go wrong talking to a source, as the connectors report it. Messages are written by the
 * gateway (never a provider's raw body or a URL with a credential), because they reach the Console,
 * the connection's `last_error` and agents. The queue consequences are decided in one place
 * (`run/failure-mapper.ts`).
 */
export class SourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Retry later: 5xx, a network failure, a timeout or an unreadable answer. Retried with backoff; when the
 * source said how long to wait (`Retry-After` on a 503), the next try waits at least that long.
 */
export class SourceUnavailableError extends SourceError {
  readonly retryAfterMs: number | undefined;
  constructor(message: string, retryAfterMs?: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** Rate limited (a 429, Gmail's 403 `rateLimitExceeded`): wait `retryAfterMs`; the connection stays scheduled. */
export class SourceRateLimitedError extends SourceError {
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** The access token expired (an OAuth 401): refresh it once and try once more. */
export class SourceTokenExpiredError extends SourceError {}

/** Needs sign-in: the credential was revoked or is wrong; only the operator can fix it. */
export class SourceAuthError extends SourceError {}

/**
 * The provider refused the gateway's own application credentials (OAuth `invalid_client`,
 * `unauthorized_client`): the person's grant may be intact, and a new sign-in cannot help; only new
 * application credentials in Settings can. The message names the provider and says so.
 */
export class SourceAppCredentialsError extends SourceError {}

/**
 * The incremental cursor is no longer valid (Gmail 404 history, Calendar and Graph 410, People
 * `EXPIRED_SYNC_TOKEN`, CalDAV `valid-sync-token`, IMAP UIDVALIDITY): the runner syncs once in full.
 */
export class SourceCursorExpiredError extends SourceError {}

/** Rejected: the source refused this particular request (an action it rejects, a read it will not serve). */
export class SourceRejectedError extends SourceError {
  readonly status: number;
  readonly detail: string;
  constructor(message: string, status: number, detail: string) {
    super(message);
    this.status = status;
    this.detail = detail;
  }
}

/**
 * The outbound policy refused the source's address (issue 32): a link-local or metadata address, the
 * gateway's own port, a scheme that is not http(s). Nothing was sent to it, and asking again would be
 * refused again: not an outage of the source, and not retried; the operator fixes the address.
 */
export class SourceAddressRefusedError extends SourceError {}

/** A live request the connector cannot serve as asked (unknown object, unsupported filter). */
export class LiveRequestError extends SourceError {}

