import { BackendTerminatedError, BackendTerminatedUnexpectedlyError, ConnectionError } from 'slonik';

export type Store = 'postgres' | 'redis';

/** Seconds an HTTP client is told to wait (`Retry-After`) while a store does not answer. */
export const STORE_RETRY_AFTER_SECONDS = 5;

/** The answer's text for each store, naming it so the operator knows which one to look at. */
export const STORE_DOWN_TEXT: Record<Store, string> = {
  postgres: 'the database (Postgres) is not answering; try again shortly',
  redis: 'the queue store (Redis) is not answering; try again shortly',
};

// SQLSTATE class 08 (connection exception), 57P01–57P03 (the server shutting down or starting), 53300 (no free connection slot).
const POSTGRES_UNREACHABLE_STATE = /^(08...|57P0[123]|53300)$/;
const SOCKET_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
// ioredis's own failures once its connection is gone (its commands fail fast on producer-side clients).
const REDIS_FAILURE = /^(Connection is closed\.|Stream isn't writeable|Reached the max retries per request limit)/;

type ErrorLike = { name?: unknown; message?: unknown; code?: unknown; cause?: unknown; errors?: unknown; stack?: unknown };

/**
 * Which store an error says could not be reached, or null for any other failure (a bad query, a bug).
 * Follows `cause` and `AggregateError` members a few levels down, since slonik and pg wrap the socket's error.
 */
export function unreachableStore(error: unknown, depth = 0): Store | null {
  if (depth > 4 || typeof error !== 'object' || error === null) return null;
  if (error instanceof ConnectionError || error instanceof BackendTerminatedError || error instanceof BackendTerminatedUnexpectedlyError) return 'postgres';
  const { name, message, code, cause, errors } = error as ErrorLike;
  if (name === 'MaxRetriesPerRequestError' || (typeof message === 'string' && REDIS_FAILURE.test(message))) return 'redis';
  if (typeof code === 'string' && POSTGRES_UNREACHABLE_STATE.test(code)) return 'postgres';
  if (typeof message === 'string' && /^(Connection terminated|timeout exceeded when trying to connect)/.test(message)) return 'postgres';
  const nested = [cause, ...(Array.isArray(errors) ? errors : [])].map((inner) => unreachableStore(inner, depth + 1)).find((store) => store !== null);
  if (nested) return nested;
  // A bare socket failure names no store; the Console reaches Redis through ioredis, whose failures are named above.
  if (typeof code === 'string' && SOCKET_FAILURES.has(code)) return 'postgres';
  return null;
}
