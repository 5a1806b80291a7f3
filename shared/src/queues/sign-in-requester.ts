import type { Job } from 'bullmq';
import type { Logger } from '../logger/index.ts';
import type { RedisSettings } from '../redis/index.ts';
import type { z } from 'zod';
import {
  ITEM_REMOVE_JOB_OPTIONS,
  ItemRemoveJobSchema,
  LinkExchangeJobSchema,
  LinkStartJobSchema,
  LinkStartResultSchema,
  OAuthExchangeJobSchema,
  SignInJobResultSchema,
  TokenClaimJobSchema,
  type ItemRemoveJob,
  type LinkExchangeJob,
  type LinkStartJob,
  type LinkStartResult,
  type OAuthExchangeJob,
  type SignInJobResult,
  type TokenClaimJob,
} from './job-catalogue.ts';
import { awaitJob, openRequester, type RequesterQueue } from './job-requester.ts';

/** What the Console hears when the exchange did not come back: the sign-in has to start again. */
const UNANSWERED: SignInJobResult = {
  status: 'refused',
  reason: 'unreachable',
  message: 'the sync-worker did not finish the sign-in in time; start the sign-in again',
};

/**
 * The Console's side of a sign-in (design 7.1): the code exchange runs as a job on the sync-worker,
 * which alone talks to the provider; this awaits its outcome with a timeout. It never throws for a
 * refusal or a timeout: every end is a `SignInJobResult` the Console can show and record.
 */
export function createSignInRequesterFrom({ queue, events, log, timeoutMs }: RequesterQueue & { log: Logger; timeoutMs: number }) {
  async function signInAnswer<T extends SignInJobResult | LinkStartResult>(job: Job, schema: z.ZodType<T>): Promise<T> {
    const outcome = await awaitJob(job, events, timeoutMs);
    if (outcome.finished) {
      const parsed = schema.safeParse(outcome.value);
      if (parsed.success) return parsed.data;
      log.error({ jobId: job.id }, 'sign-in job returned an unexpected shape');
    } else {
      // Never the error itself: a failed job's data holds the one-time code or setup token.
      log.warn({ jobId: job.id, timedOut: outcome.timedOut }, 'sign-in job did not answer');
      // A failed job goes too (one that timed out is gone already), and the code or token in its data with it.
      if (!outcome.timedOut) await job.remove().catch(() => undefined);
    }
    return UNANSWERED as T;
  }
  return {
    async exchange(request: Omit<OAuthExchangeJob, 'deadline'>): Promise<SignInJobResult> {
      return signInAnswer(await queue.add('oauth_exchange', OAuthExchangeJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs })), SignInJobResultSchema);
    },
    /** Claims a one-time setup token on the sync-worker (the bank-link bridge). */
    async claim(request: Omit<TokenClaimJob, 'deadline'>): Promise<SignInJobResult> {
      return signInAnswer(await queue.add('token_claim', TokenClaimJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs })), SignInJobResultSchema);
    },
    /** Asks the sync-worker for a hosted link at the aggregator (a `link` sign-in, or its update mode). */
    async linkStart(request: Omit<LinkStartJob, 'deadline'>): Promise<LinkStartResult> {
      return signInAnswer(await queue.add('link_start', LinkStartJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs })), LinkStartResultSchema);
    },
    /** Finishes a `link` sign-in on the sync-worker once the browser came back from the hosted link. */
    async linkExchange(request: Omit<LinkExchangeJob, 'deadline'>): Promise<SignInJobResult> {
      return signInAnswer(await queue.add('link_exchange', LinkExchangeJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs })), SignInJobResultSchema);
    },
    /**
     * Hands the removal of a deleted sign-in's item to the sync-worker and returns at once: nobody
     * awaits the aggregator's answer (the worker retries, then logs). Returns the job's id.
     */
    async removeItem(request: ItemRemoveJob): Promise<string> {
      const job = await queue.add('item_remove', ItemRemoveJobSchema.parse(request), ITEM_REMOVE_JOB_OPTIONS);
      return job.id ?? '';
    },
  };
}

export type SignInRequester = ReturnType<typeof createSignInRequesterFrom>;

/** Opens the `signin` producer queue and its events; `close()` releases both. */
export async function createSignInRequester(settings: RedisSettings, log: Logger, timeoutMs: number): Promise<SignInRequester & { close(): Promise<void> }> {
  return openRequester(settings, 'signin', log, (connection) => createSignInRequesterFrom({ ...connection, log, timeoutMs }));
}
