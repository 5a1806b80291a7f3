/**
 * What went wrong, in the domain's own words. A domain error carries no transport's number: each edge maps
 * a kind to its answer in one place (the HTTP status in `shared/http`, a tool error on the agent port).
 */
export type ErrorKind =
  /** The input is malformed or names something that is not there to use; the caller fixes it. */
  | 'invalid'
  /** No usable credential was given. */
  | 'unauthorized'
  /** The caller is known and not allowed. */
  | 'forbidden'
  | 'not_found'
  /** The request is sound, but the state of what it names does not allow it now. */
  | 'conflict'
  /** Well formed, and refused on its meaning (a credential the source refused, nothing to grant). */
  | 'unprocessable'
  /** A source or the sync-worker answered with a failure. */
  | 'upstream'
  /** A store or queue this needs is not reachable; try again. */
  | 'unavailable'
  /** A source or the sync-worker did not answer in time. */
  | 'timeout';

/** A failure a caller may be shown: its kind, a stable machine code (`code` in a JSON answer) and its message. */
export class DomainError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;

  constructor(kind: ErrorKind, code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.kind = kind;
    this.code = code;
  }
}

/** The class of one kind and code; with a default message, the message may be left out. */
function kindOf(kind: ErrorKind, code: string): new (message: string) => DomainError;
function kindOf(kind: ErrorKind, code: string, defaultMessage: string): new (message?: string) => DomainError;
function kindOf(kind: ErrorKind, code: string, defaultMessage?: string) {
  return class extends DomainError {
    constructor(message = defaultMessage) {
      super(kind, code, message ?? '');
    }
  };
}

export class ValidationError extends kindOf('invalid', 'validation_failed') {}
export class UnauthorizedError extends kindOf('unauthorized', 'unauthorized', 'unauthorized') {}
export class ForbiddenError extends kindOf('forbidden', 'forbidden', 'forbidden') {}
export class NotFoundError extends kindOf('not_found', 'not_found', 'not found') {}
export class ConflictError extends kindOf('conflict', 'conflict') {}
export class UpstreamError extends kindOf('upstream', 'upstream_failed', 'the source did not answer') {}
