import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { CredentialsCipherError } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import type { LiveJob, LiveJobResult } from '@pcg/shared/queues';
import type { ConnectorContext } from '../connectors/connector-types.ts';
import {
  LiveRequestError,
  SourceAddressRefusedError,
  SourceAppCredentialsError,
  SourceAuthError,
  SourceError,
  SourceRateLimitedError,
  SourceRejectedError,
  SourceTokenExpiredError,
  SourceUnavailableError,
} from '../connectors/kit/source-errors.ts';
import type { ConnectionStore } from '../sync/connection-store.ts';

/** Raised into a job's work when the worker is shutting down and the job should go back to the queue. */
export class ShutdownError extends Error {
  constructor() {
    super('the sync-worker is shutting down');
    this.name = 'ShutdownError';
  }
}

/** Message shown for a failure that is ours, not the source's; the details go to the log only. */
export const INTERNAL_SYNC_FAILURE = 'the sync failed inside the gateway; see the sync-worker log';
export const LIVE_SIGN_IN_MESSAGE = "the source refused the connection's credentials; the operator must sign in again";
const CIPHER_MESSAGE = 'the stored credentials do not open with this CREDENTIALS_KEY; sign in again';

/** What a connector's failure means, before it is turned into a sync's or a live job's control flow. */
export type Failure =
  | { kind: 'shutdown' }
  | { kind: 'rate_limited'; message: string; retryAfterMs: number }
  | { kind: 'needs_sign_in'; message: string }
  | { kind: 'app_refused'; message: string }
  | { kind: 'address_refused'; message: string }
  | { kind: 'rejected'; message: string }
  | { kind: 'retry'; message: string; retryAfterMs?: number }
  | { kind: 'internal'; error: unknown };

export function readFailure(error: unknown): Failure {
  if (error instanceof ShutdownError) return { kind: 'shutdown' };
  if (error instanceof SourceRateLimitedError) return { kind: 'rate_limited', message: error.message, retryAfterMs: error.retryAfterMs };
  if (error instanceof SourceAuthError) return { kind: 'needs_sign_in', message: `${error.message}; sign in again` };
  if (error instanceof SourceAppCredentialsError) return { kind: 'app_refused', message: error.message };
  if (error instanceof SourceAddressRefusedError) return { kind: 'address_refused', message: error.message };
  if (error instanceof CredentialsCipherError) return { kind: 'needs_sign_in', message: CIPHER_MESSAGE };
  if (error instanceof SourceRejectedError || error instanceof LiveRequestError) return { kind: 'rejected', message: error.message };
  if (error instanceof SourceUnavailableError) {
    return error.retryAfterMs === undefined ? { kind: 'retry', message: error.message } : { kind: 'retry', message: error.message, retryAfterMs: error.retryAfterMs };
  }
  // A cursor or token error that got this far was already given its one full resync or refresh.
  if (error instanceof SourceError) return { kind: 'retry', message: error.message };
  return { kind: 'internal', error };
}

/**
 * Runs one connector operation; when it fails because the access token expired, refreshes the token
 * once (`context.refreshToken()`) and runs the operation once more. A second expiry right after a
 * successful refresh means the source will not take any token of this sign-in: needs sign-in.
 */
export async function withTokenRefresh<T>(context: Pick<ConnectorContext, 'refreshToken' | 'log'>, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof SourceTokenExpiredError)) throw error;
    context.log.info('access token expired; refreshing it once');
    await context.refreshToken();
  }
  try {
    return await work();
  } catch (error) {
    if (error instanceof SourceTokenExpiredError) throw new SourceAuthError(`${error.message} right after a refresh`);
    throw error;
  }
}

export type FailureDeps = {
  store: Pick<ConnectionStore, 'noteFailure' | 'markNeedsSignIn'>;
  unschedule(connectionId: string): Promise<void>;
  log: Logger;
};

/**
 * The one place where a connector's failure becomes queue control flow (conventions: queues), for the
 * sync runner and the live runner alike:
 * - shutdown → a sync goes back to the queue at once without using an attempt; a live job answers so;
 * - rate limited (429 with Retry-After, a quota 403) → a sync waits that long without using an attempt
 *   and stays scheduled (a per-job delay rather than the queue-wide limit, so one source's limit never
 *   holds up another's sync); a live job answers when to try again;
 * - needs sign-in (revoked credentials, a refused refresh, credentials this key cannot open) → the
 *   connection shows it, its scheduler is removed, and a sync fails for good (`UnrecoverableError`);
 * - the provider refused the gateway's application credentials → the connection is `error` with a message
 *   naming Settings, the sync fails without retries (they would only repeat the refusal) and stays
 *   scheduled, so the first sync after new credentials are saved heals it with the grant it kept;
 * - the outbound policy refused the source's address (issue 32) → the connection is `error` with the
 *   refusal as its message, at once and without retries (not an outage: nothing was sent, and the same
 *   address would be refused again); it stays scheduled, so a corrected address heals it;
 * - anything else (5xx, network, timeout, a rejection, a bug) → a sync is retried with backoff (no sooner
 *   than a `Retry-After`) and marked `error` when no attempt is left; a live job answers the message.
 * The connection's `last_error` says what happened every time; cached data is never touched here.
 */
export function createFailureMapper(deps: FailureDeps) {
  async function needsSignIn(connectionId: string, message: string): Promise<void> {
    await deps.store.markNeedsSignIn(connectionId, message);
    await deps.unschedule(connectionId).catch((cause: unknown) => deps.log.warn({ err: cause, connectionId }, 'could not remove the sync scheduler'));
    deps.log.warn({ connectionId }, 'source refused the credentials; connection needs sign-in');
  }

  return {
    async sync(error: unknown, job: Job, token: string | undefined, connectionId: string): Promise<never> {
      const failure = readFailure(error);
      switch (failure.kind) {
        case 'shutdown':
          await job.moveToDelayed(Date.now(), token);
          throw new DelayedError();
        case 'rate_limited':
          await deps.store.noteFailure(connectionId, failure.message, false);
          deps.log.warn({ connectionId, jobId: job.id, retryAfterMs: failure.retryAfterMs }, 'source rate limited the sync');
          await job.moveToDelayed(Date.now() + failure.retryAfterMs, token);
          throw new DelayedError();
        case 'needs_sign_in':
          await needsSignIn(connectionId, failure.message);
          throw new UnrecoverableError(failure.message);
        case 'app_refused':
          await deps.store.noteFailure(connectionId, failure.message, true);
          deps.log.warn({ connectionId, jobId: job.id, reason: failure.message }, 'the provider refused the application credentials');
          throw new UnrecoverableError(failure.message);
        case 'address_refused':
          await deps.store.noteFailure(connectionId, failure.message, true);
          deps.log.warn({ connectionId, jobId: job.id, reason: failure.message }, 'the outbound policy refused the source address');
          throw new UnrecoverableError(failure.message);
        default: {
          const exhausted = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
          const message = failure.kind === 'internal' ? INTERNAL_SYNC_FAILURE : failure.message;
          if (failure.kind === 'internal') deps.log.error({ err: failure.error, connectionId, jobId: job.id }, 'sync failed');
          else deps.log.warn({ connectionId, jobId: job.id, attempt: job.attemptsMade + 1, reason: message }, 'sync attempt failed');
          await deps.store.noteFailure(connectionId, exhausted ? message : `${message}; retrying`, exhausted);
          throw error instanceof Error ? error : new Error(String(error));
        }
      }
    },

    async live(error: unknown, data: LiveJob, log: Logger): Promise<LiveJobResult> {
      const failed = (message: string): LiveJobResult => ({ status: 'failed', message });
      const acting = data.kind === 'invoke_action';
      const failure = readFailure(error);
      switch (failure.kind) {
        case 'shutdown':
          return failed(acting ? 'the sync-worker stopped while the action was under way; it may or may not have been carried out' : 'the sync-worker is stopping; try again');
        case 'needs_sign_in':
          await needsSignIn(data.connectionId, failure.message);
          return failed(LIVE_SIGN_IN_MESSAGE);
        case 'rate_limited':
          return failed(`the source is rate limiting requests; try again in ${Math.ceil(failure.retryAfterMs / 1000)} s`);
        case 'rejected':
        case 'app_refused':
        case 'address_refused':
          return failed(failure.message);
        case 'retry':
          return failed(acting ? `${failure.message}; the action may or may not have been carried out` : failure.message);
        case 'internal':
          log.error({ err: failure.error }, 'live request failed');
          return failed('the live request failed in the sync-worker');
      }
    },
  };
}

export type FailureMapper = ReturnType<typeof createFailureMapper>;

/**
 * Exponential backoff with jitter from `baseMs`, capped at 30 minutes (the `source-backoff` type), and
 * never sooner than a `Retry-After` the source gave with its failure.
 */
export function sourceBackoff(baseMs: number): (attemptsMade: number, error?: unknown) => number {
  return (attemptsMade, error) => {
    const exponential = Math.min(baseMs * 2 ** Math.max(0, attemptsMade - 1), 30 * 60_000);
    const jittered = Math.round(exponential * (0.8 + Math.random() * 0.4));
    const asked = error instanceof SourceUnavailableError ? (error.retryAfterMs ?? 0) : 0;
    return Math.max(jittered, asked);
  };
}
