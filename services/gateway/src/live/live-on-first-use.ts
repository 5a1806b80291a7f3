import type { LiveRequester } from '@pcg/shared/live';

export type ClosableLiveRequester = LiveRequester & { close(): Promise<void> };

/**
 * A live requester that opens the real one (the `live` queue and its events, and with them BullMQ) on the
 * first `fetch_live` or `invoke_action`, not when the gateway starts: most gateways never take a live
 * request, and the queue's code and connections cost them memory for nothing (issue 38).
 *
 * Concurrent first requests share one opening. An opening that fails fails the requests awaiting it, and
 * the next request tries again. `close()` waits for an opening under way and closes what it opened; after
 * it, requests are refused instead of opening the queue again.
 */
export function openLiveOnFirstUse(open: () => Promise<ClosableLiveRequester>): ClosableLiveRequester {
  let opening: Promise<ClosableLiveRequester> | undefined;
  let closing: Promise<void> | undefined;

  function requester(): Promise<ClosableLiveRequester> {
    if (closing) return Promise.reject(new Error('the live requester is closed'));
    opening ??= open().catch((error: unknown) => {
      opening = undefined;
      throw error;
    });
    return opening;
  }

  return {
    fetchLive: async (request) => (await requester()).fetchLive(request),
    invokeAction: async (request) => (await requester()).invokeAction(request),
    close: () =>
      (closing ??= (async () => {
        const opened = await opening?.catch(() => undefined);
        await opened?.close();
      })()),
  };
}
