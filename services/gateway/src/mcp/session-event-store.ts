import { randomBytes } from 'node:crypto';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';

/** Limits of one session's store; defaults in `EVENT_STORE_LIMITS`. */
export type EventStoreLimits = {
  /** Estimated bytes of the messages kept; the oldest go first past it. */
  maxBytes: number;
  /** Events kept at most. */
  maxEvents: number;
  /** Events older than this are dropped: a client reconnects within seconds, or not at all. */
  maxAgeMs: number;
};

/**
 * 64 KiB, 64 events, one minute: a client told to retry after 1 s comes back within seconds. At the
 * 512-session cap that is 32 MiB; a single larger answer is still kept, alone, until the next event.
 * (256 KiB a session cost 25 MB of heap and 175 MB of RSS over 64 busy sessions in bench:mcp.)
 */
export const EVENT_STORE_LIMITS: EventStoreLimits = { maxBytes: 64 * 1024, maxEvents: 64, maxAgeMs: 60_000 };

/** Bytes counted for an event besides its message (ids, the entry, the SSE framing). */
const EVENT_OVERHEAD_BYTES = 128;

/** What a `Last-Event-ID` names in one session's store. */
export type EventIdStatus = 'kept' | 'expired' | 'unknown';

type EventId = string;
type StreamId = string;
type StoredEvent = { id: EventId; seq: number; streamId: StreamId; message: JSONRPCMessage | null; bytes: number; at: number };

/**
 * A tool result's size is its text blocks; anything else is serialized (initialize, tools/list: once a
 * session). Serializing every result again only to weigh it would cost as much as sending it.
 */
function estimateBytes(message: JSONRPCMessage): number {
  const content = (message as { result?: { content?: unknown } }).result?.content;
  if (Array.isArray(content)) {
    let bytes = 0;
    for (const block of content) bytes += typeof (block as { text?: unknown }).text === 'string' ? (block as { text: string }).text.length : 256;
    return bytes + EVENT_OVERHEAD_BYTES;
  }
  return JSON.stringify(message).length + EVENT_OVERHEAD_BYTES;
}

/**
 * One session's SSE events, for `Last-Event-ID` resumption (session-transport.ts). Each session has its
 * own store and its own random id prefix, so an event id of another session names nothing here and
 * replays nothing. Bounded by bytes, count and age; the oldest events go first.
 */
export function createSessionEventStore(limits: EventStoreLimits = EVENT_STORE_LIMITS, now: () => number = Date.now) {
  const prefix = randomBytes(6).toString('hex');
  // Oldest first; evicted events leave the array at once, so nothing evicted stays reachable (at most
  // `maxEvents` entries, so taking from the front is cheap).
  const events: StoredEvent[] = [];
  let bytes = 0;
  let seq = 0;

  function evict(): void {
    const cutoff = now() - limits.maxAgeMs;
    // The newest event always stays (unless too old): it is the one a dropped stream most likely missed.
    for (let oldest = events[0]; oldest !== undefined; oldest = events[0]) {
      if (events.length === 1 && oldest.at >= cutoff) break;
      if (bytes <= limits.maxBytes && events.length <= limits.maxEvents && oldest.at >= cutoff) break;
      bytes -= oldest.bytes;
      events.shift();
    }
  }

  function find(eventId: EventId): StoredEvent | undefined {
    if (!eventId.startsWith(`${prefix}-`)) return undefined;
    const wanted = Number(eventId.slice(prefix.length + 1));
    if (!Number.isSafeInteger(wanted)) return undefined;
    // Sequence numbers are dense from the oldest kept event, so the event is at a known place.
    const first = events[0];
    if (!first || wanted < first.seq) return undefined;
    const found = events[wanted - first.seq];
    return found?.id === eventId ? found : undefined;
  }

  return {
    get size() {
      return events.length;
    },
    get bytes() {
      return bytes;
    },
    /**
     * `expired`: an event this store gave out and has since dropped (what came after it is gone, so the
     * request must be sent again); `unknown`: an id it never gave out (another session's, or made up).
     */
    statusOf(eventId: EventId): EventIdStatus {
      evict();
      if (find(eventId)) return 'kept';
      if (!eventId.startsWith(`${prefix}-`)) return 'unknown';
      const wanted = Number(eventId.slice(prefix.length + 1));
      return Number.isSafeInteger(wanted) && wanted >= 1 && wanted <= seq && eventId === `${prefix}-${wanted}` ? 'expired' : 'unknown';
    },
    /** Keeps one event of a stream and gives its id; a priming event has no message. */
    store(streamId: StreamId, message: JSONRPCMessage | null): EventId {
      seq += 1;
      const event: StoredEvent = { id: `${prefix}-${seq}`, seq, streamId, message, bytes: message === null ? EVENT_OVERHEAD_BYTES : estimateBytes(message), at: now() };
      events.push(event);
      bytes += event.bytes;
      evict();
      return event.id;
    },
    /** The stream an event id belongs to, while the event is kept. */
    streamOf(eventId: EventId): StreamId | undefined {
      evict();
      return find(eventId)?.streamId;
    },
    /** The stream of a kept event and that stream's later events with a message, oldest first; undefined when it is not kept. */
    after(lastEventId: EventId): { streamId: StreamId; events: Array<{ id: EventId; message: JSONRPCMessage }> } | undefined {
      evict();
      const last = find(lastEventId);
      if (!last) return undefined;
      const later: Array<{ id: EventId; message: JSONRPCMessage }> = [];
      for (let index = last.seq - (events[0] as StoredEvent).seq + 1; index < events.length; index += 1) {
        const event = events[index] as StoredEvent;
        if (event.streamId === last.streamId && event.message !== null) later.push({ id: event.id, message: event.message });
      }
      return { streamId: last.streamId, events: later };
    },
  };
}

export type SessionEventStore = ReturnType<typeof createSessionEventStore>;
