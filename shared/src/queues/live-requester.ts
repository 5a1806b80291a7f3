import type { Job } from 'bullmq';
import { z } from 'zod';
import { DomainError, UpstreamError } from '../errors/index.ts';
import {
  ActionResultSchema,
  LiveFetchResultSchema,
  type ActionInvokeRequest,
  type ActionResult,
  type LiveFetchRequest,
  type LiveFetchResult,
  type LiveRequester,
} from '../live/index.ts';
import type { Logger } from '../logger/index.ts';
import type { RedisSettings } from '../redis/index.ts';
import { LiveJobResultSchema, LiveJobSchema, type LiveJob } from './job-catalogue.ts';
import { awaitJob, openRequester, type RequesterQueue } from './job-requester.ts';

export const liveConfig = z.object({
  /** How long a caller awaits a live read or an action before giving up, in milliseconds; default 20000. */
  LIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(20_000),
});

/** A live request that did not come back in time; safe to show an agent. */
export class LiveTimeoutError extends DomainError {
  constructor(seconds: number, kind: LiveJob['kind']) {
    super(
      'timeout',
      'live_timeout',
      kind === 'invoke_action'
        ? `the action was not confirmed within ${seconds} s; it may still be carried out by the source`
        : `the source did not answer within ${seconds} s`,
    );
  }
}

export type LiveRequesterDeps = RequesterQueue & {
  log: Logger;
  /** Default 20000 ms. */
  timeoutMs?: number;
};

/**
 * The producer side of the `live` queue (design 4.8): each request is one job, never retried, awaited
 * with a timeout. A worker always completes a live job with an answer or a safe failure message, which
 * comes back here as an `UpstreamError`; a timeout is a `LiveTimeoutError`. A request still waiting when
 * the caller gives up is removed, and carries a deadline past which a worker drops it unrun.
 */
export function createLiveRequesterFrom({ queue, events, log, timeoutMs = 20_000 }: LiveRequesterDeps): LiveRequester {
  async function run(request: LiveJob extends infer J ? Omit<J, 'deadline'> : never): Promise<unknown> {
    const job: LiveJob = LiveJobSchema.parse({ ...request, deadline: Date.now() + timeoutMs });
    const added: Job = await queue.add(job.kind, job);
    const outcome = await awaitJob(added, events, timeoutMs);
    if (!outcome.finished) {
      if (outcome.timedOut) throw new LiveTimeoutError(Math.round(timeoutMs / 100) / 10, job.kind);
      log.error({ err: outcome.error, jobId: added.id, kind: job.kind }, 'live job failed in the worker');
      throw new UpstreamError('the live request failed in the sync-worker');
    }
    const result = LiveJobResultSchema.safeParse(outcome.value);
    if (!result.success) {
      log.error({ jobId: added.id, kind: job.kind }, 'live job returned an unexpected shape');
      throw new UpstreamError('the live request failed in the sync-worker');
    }
    if (result.data.status === 'failed') throw new UpstreamError(result.data.message);
    return result.data.value;
  }

  return {
    async fetchLive(request: Omit<LiveFetchRequest, 'kind'>): Promise<LiveFetchResult> {
      return LiveFetchResultSchema.parse(await run({ ...request, kind: 'fetch_live' }));
    },
    async invokeAction(request: Omit<ActionInvokeRequest, 'kind'>): Promise<ActionResult> {
      return ActionResultSchema.parse(await run({ arguments: {}, ...request, kind: 'invoke_action' }));
    },
  };
}

/**
 * Opens the `live` producer queue and its QueueEvents and returns a `LiveRequester` with `close()`.
 * The gateway and the Console each hold one for `fetch_live` and `invoke_action`.
 */
export async function createLiveRequester(
  settings: RedisSettings,
  log: Logger,
  options: { timeoutMs?: number } = {},
): Promise<LiveRequester & { close(): Promise<void> }> {
  return openRequester(settings, 'live', log, (connection) => createLiveRequesterFrom({ ...connection, log, timeoutMs: options.timeoutMs }));
}
