import type { Job } from 'bullmq';
import type { z } from 'zod';
import { CHECK_TIME_BUDGET_MS, ConnectionCheckSchema, CredentialCheckResultSchema, type ConnectionCheck, type CredentialCheckResult } from '../connections/index.ts';
import type { Logger } from '../logger/index.ts';
import type { RedisSettings } from '../redis/index.ts';
import { ConnectionCheckJobSchema, CredentialCheckJobSchema, LiveJobResultSchema, type CredentialCheckJob } from './job-catalogue.ts';
import { awaitJob, openRequester, type RequesterQueue } from './job-requester.ts';

/** A check waits for its 20 s on the source plus the queue's own hand-over. */
export const CHECK_WAIT_MS = CHECK_TIME_BUDGET_MS + 5_000;

/** Why a check has no answer: no worker took it in time, or the worker failed it. Safe to show. */
export class CheckUnansweredError extends Error {}

/**
 * The Console's side of the connection check (issue 32): jobs on the `live` queue, like `fetch_live`,
 * answered by the sync-worker (the one process that talks to sources), never retried, awaited with a
 * timeout; a job still waiting when the Console gives up is taken back.
 */
export function createCheckRequesterFrom({ queue, events, log, timeoutMs = CHECK_WAIT_MS }: RequesterQueue & { log: Logger; timeoutMs?: number }) {
  async function answer<T>(added: Job, schema: z.ZodType<T>): Promise<T> {
    const outcome = await awaitJob(added, events, timeoutMs);
    if (!outcome.finished) {
      log.warn({ jobId: added.id, timedOut: outcome.timedOut }, 'check job did not answer');
      throw new CheckUnansweredError(outcome.timedOut ? `the sync-worker did not answer within ${Math.round(timeoutMs / 1000)} s; is it running?` : 'the check failed in the sync-worker');
    }
    const result = LiveJobResultSchema.safeParse(outcome.value);
    if (!result.success) throw new CheckUnansweredError('the check failed in the sync-worker');
    if (result.data.status === 'failed') throw new CheckUnansweredError(result.data.message);
    const value = schema.safeParse(result.data.value);
    if (!value.success) throw new CheckUnansweredError('the check failed in the sync-worker');
    return value.data;
  }
  /** No worker listens on the queue: say so at once rather than wait out the timeout. */
  async function someWorker(): Promise<void> {
    const count = await queue.getWorkersCount().catch(() => 1);
    if (count === 0) throw new CheckUnansweredError('no sync-worker is running');
  }
  return {
    /** Runs the whole check of a saved connection. */
    async check(connectionId: string): Promise<ConnectionCheck> {
      await someWorker();
      const job = ConnectionCheckJobSchema.parse({ connectionId, deadline: Date.now() + timeoutMs });
      return answer(await queue.add('check_connection', job), ConnectionCheckSchema);
    },
    /** Runs the credential step for credentials not yet saved (sealed for the sign-in about to be made). */
    async checkCredentials(request: Omit<CredentialCheckJob, 'deadline'>): Promise<CredentialCheckResult> {
      await someWorker();
      const job = CredentialCheckJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs });
      // The job's data holds sealed credentials: it goes a minute after its answer (long enough to be read).
      return answer(await queue.add('check_credentials', job, { removeOnComplete: { age: 60 }, removeOnFail: { age: 60 } }), CredentialCheckResultSchema);
    },
  };
}

export type CheckRequester = ReturnType<typeof createCheckRequesterFrom>;

/** Opens a `live` producer queue and its events for checks; `close()` releases both. */
export async function createCheckRequester(settings: RedisSettings, log: Logger, options: { timeoutMs?: number } = {}): Promise<CheckRequester & { close(): Promise<void> }> {
  return openRequester(settings, 'live', log, (connection) => createCheckRequesterFrom({ ...connection, log, timeoutMs: options.timeoutMs }));
}
