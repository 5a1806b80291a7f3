import type { Job, Queue, QueueEvents } from 'bullmq';
import type { Logger } from '../logger/index.ts';
import type { RedisSettings } from '../redis/index.ts';
import { OAuthExchangeJobSchema, SignInJobResultSchema, TokenClaimJobSchema, type OAuthExchangeJob, type SignInJobResult, type TokenClaimJob } from './job-catalogue.ts';
import { openQueue, openQueueEvents } from './queue-connections.ts';

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
export function createSignInRequesterFrom({ queue, events, log, timeoutMs }: { queue: Queue; events: QueueEvents; log: Logger; timeoutMs: number }) {
  async function awaitJob(job: Job): Promise<SignInJobResult> {
    try {
      const parsed = SignInJobResultSchema.safeParse(await job.waitUntilFinished(events, timeoutMs));
      if (parsed.success) return parsed.data;
      log.error({ jobId: job.id }, 'sign-in job returned an unexpected shape');
    } catch (error) {
      // Never the error itself: a failed job's data holds the one-time code or setup token.
      log.warn({ jobId: job.id, timedOut: /timed out/.test((error as Error).message) }, 'sign-in job did not answer');
      await job.remove().catch(() => undefined);
    }
    return UNANSWERED;
  }
  return {
    async exchange(request: Omit<OAuthExchangeJob, 'deadline'>): Promise<SignInJobResult> {
      return awaitJob(await queue.add('oauth_exchange', OAuthExchangeJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs })));
    },
    /** Claims a one-time setup token on the sync-worker (the bank-link bridge). */
    async claim(request: Omit<TokenClaimJob, 'deadline'>): Promise<SignInJobResult> {
      return awaitJob(await queue.add('token_claim', TokenClaimJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs })));
    },
  };
}

export type SignInRequester = ReturnType<typeof createSignInRequesterFrom>;

/** Opens the `signin` producer queue and its events; `close()` releases both. */
export async function createSignInRequester(settings: RedisSettings, log: Logger, timeoutMs: number): Promise<SignInRequester & { close(): Promise<void> }> {
  const queue = await openQueue(settings, 'signin', log);
  let events: QueueEvents;
  try {
    events = await openQueueEvents(settings, 'signin', log);
  } catch (error) {
    await queue.close();
    throw error;
  }
  return {
    ...createSignInRequesterFrom({ queue, events, log, timeoutMs }),
    async close() {
      await events.close();
      await queue.close();
    },
  };
}
