import type { ServerResponse } from 'node:http';

type RequestId = string | number;

/** `1` and `"1"` are different JSON-RPC ids, and stay different here. */
const keyOf = (id: RequestId) => `${typeof id}:${String(id)}`;

/** The ids of the requests (not notifications or responses) in a POST body, single or batch. */
export function requestIdsOf(body: unknown): RequestId[] {
  const messages = Array.isArray(body) ? body : [body];
  const ids: RequestId[] = [];
  for (const message of messages) {
    if (typeof message !== 'object' || message === null || !('method' in message) || !('id' in message)) continue;
    const id = (message as { id: unknown }).id;
    if (typeof id === 'string' || typeof id === 'number') ids.push(id);
  }
  return ids;
}

/**
 * The JSON-RPC ids in flight on each session. The session transport maps a response to its HTTP stream by
 * the request id alone, so a second request reusing an id in flight would take over the first one's
 * stream and the first would never be answered; the router refuses the second instead.
 */
export function createInFlightIds() {
  const bySession = new WeakMap<object, Set<string>>();

  return {
    /**
     * Claims the ids for the life of `response`; false (and nothing claimed) when one is already in
     * flight on this session or the body repeats one.
     */
    claim(session: object, ids: readonly RequestId[], response: ServerResponse): boolean {
      if (ids.length === 0) return true;
      let inFlight = bySession.get(session);
      if (!inFlight) {
        inFlight = new Set();
        bySession.set(session, inFlight);
      }
      const keys = ids.map(keyOf);
      if (new Set(keys).size !== keys.length || keys.some((key) => inFlight.has(key))) return false;
      for (const key of keys) inFlight.add(key);
      const held = inFlight;
      response.once('close', () => {
        for (const key of keys) held.delete(key);
      });
      return true;
    },
  };
}
