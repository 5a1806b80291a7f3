import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { CredentialsCipherError } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import { SourceAuthError, SourceError, SourceRateLimitedError } from '../connectors/kit/source-errors.ts';
import type { ConnectionStore } from './connection-store.ts';

/** Raised into a job's work when the worker is shutting down and the job should go back to the queue. */
export class ShutdownError extends Error {
  constructor() {
    super('the sync-worker is shutting down');
    this.name = 'ShutdownError';
  }
}

export type FailureDeps = {
  store: Pick<ConnectionStore, 'noteFailure' | 'markNeedsSignIn'>;
  unschedule(connectionId: string): Promise<void>;
  log: Logger;
};

/** Message shown for a failure that is ours, not the source's; the details go to the log only. */
export const INTERNAL_SYNC_FAILURE = 'the sync failed inside the gateway; see the sync-worker log';

/**
 * The one place where a connector's failure becomes queue control flow (conventions: queues):
 * - shutdown → the job goes back to the queue at once, without using an attempt;
 * - 429 with Retry-After → this job waits that long, without using an attempt (a per-job delay rather
 *   than the queue-wide rate limit, so one source's limit never holds up another source's sync);
 * - revoked credentials (or credentials this key cannot open) → needs sign-in, the scheduler is removed,
 *   and the job fails for good (`UnrecoverableError`);
 * - anything else (5xx, network, timeout, a bug) → the error is rethrown and BullMQ retries with backoff;
 *   the connection is marked `error` when no attempt is left.
 * The connection's `last_error` says what happened every time; cached data is never touched here.
 */
export async function handleSyncFailure(error: unknown, job: Job, token: string | undefined, connectionId: string, deps: FailureDeps): Promise<never> {
  if (error instanceof ShutdownError) {
    await job.moveToDelayed(Date.now(), token);
    throw new DelayedError();
  }
  if (error instanceof SourceRateLimitedError) {
    await deps.store.noteFailure(connectionId, error.message, false);
    deps.log.warn({ connectionId, jobId: job.id, retryAfterMs: error.retryAfterMs }, 'source rate limited the sync');
    await job.moveToDelayed(Date.now() + error.retryAfterMs, token);
    throw new DelayedError();
  }
  if (error instanceof SourceAuthError || error instanceof CredentialsCipherError) {
    const message =
      error instanceof SourceAuthError ? `${error.message}; sign in again` : 'the stored credentials do not open with this CREDENTIALS_KEY; sign in again';
    await deps.store.markNeedsSignIn(connectionId, message);
    await deps.unschedule(connectionId).catch((cause: unknown) => deps.log.warn({ err: cause, connectionId }, 'could not remove the sync scheduler'));
    deps.log.warn({ connectionId, jobId: job.id }, 'source refused the credentials; connection needs sign-in');
    throw new UnrecoverableError(message);
  }
  const exhausted = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const message = error instanceof SourceError ? error.message : INTERNAL_SYNC_FAILURE;
  if (!(error instanceof SourceError)) deps.log.error({ err: error, connectionId, jobId: job.id }, 'sync failed');
  else deps.log.warn({ connectionId, jobId: job.id, attempt: job.attemptsMade + 1, reason: error.message }, 'sync attempt failed');
  await deps.store.noteFailure(connectionId, exhausted ? message : `${message}; retrying`, exhausted);
  throw error instanceof Error ? error : new Error(String(error));
}

/** Exponential backoff with jitter from `baseMs`, capped at 30 minutes (the `source-backoff` type). */
export function sourceBackoff(baseMs: number): (attemptsMade: number) => number {
  return (attemptsMade) => {
    const exponential = Math.min(baseMs * 2 ** Math.max(0, attemptsMade - 1), 30 * 60_000);
    return Math.round(exponential * (0.8 + Math.random() * 0.4));
  };
}
