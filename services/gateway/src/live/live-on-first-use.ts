import { LATE, within } from '@pcg/shared/lifecycle';
import type { LiveRequester } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import { createLiveRequester } from '@pcg/shared/queues';
import type { RedisSettings } from '@pcg/shared/redis';

export type ClosableLiveRequester = LiveRequester & { close(): Promise<void> };

/**
 * A live requester that opens the real one (the `live` queue and its events, and with them BullMQ) on the
 * first `fetch_live` or `invoke_action`, not when the gateway starts: most gateways never take a live
 * request, and the queue's code and connections cost them memory for nothing (issue 38).
 *
 * Concurrent first requests share one opening. An opening that fails fails the requests awaiting it, and
 * the next request tries again. A request waits for the opening at most `openTimeoutMs` (the live timeout:
 * with Redis away, BullMQ waits for its connection without end), then fails; the opening goes on, and a
 * later request uses it once it is done. `close()` closes what was opened; an opening still under way is
 * awaited as long (so shutdown never hangs on it) and closed whenever it ends. After `close()`, requests
 * are refused instead of opening the queue again.
 */
export function openLiveOnFirstUse(open: () => Promise<ClosableLiveRequester>, { openTimeoutMs }: { openTimeoutMs: number }): ClosableLiveRequester {
  let opening: Promise<ClosableLiveRequester> | undefined;
  let closing: Promise<void> | undefined;

  async function requester(): Promise<ClosableLiveRequester> {
    if (closing) throw new Error('the live requester is closed');
    opening ??= open().catch((error: unknown) => {
      opening = undefined;
      throw error;
    });
    const opened = await within(opening, openTimeoutMs);
    if (opened === LATE) throw new Error(`the live queue could not be opened within ${openTimeoutMs} ms`);
    return opened;
  }

  return {
    fetchLive: async (request) => (await requester()).fetchLive(request),
    invokeAction: async (request) => (await requester()).invokeAction(request),
    close: () =>
      (closing ??= (async () => {
        const closed = opening?.then(
          (opened) => opened.close(),
          () => undefined,
        );
        // A queue still opening after the bound is left to the process's exit.
        if (closed) await within(closed, openTimeoutMs).catch(() => undefined);
      })()),
  };
}

/** The gateway's live requester (the agent port's and the operator's stdio session's), opened on first use and bounded by LIVE_TIMEOUT_MS. */
export function liveRequesterOnFirstUse(config: RedisSettings & { LIVE_TIMEOUT_MS: number }, log: Logger): ClosableLiveRequester {
  return openLiveOnFirstUse(() => createLiveRequester(config, log, { timeoutMs: config.LIVE_TIMEOUT_MS }), { openTimeoutMs: config.LIVE_TIMEOUT_MS });
}
