import type { Redis } from '../redis/index.ts';

/** What became of one event (`spooled`: still in the spool when the producer stopped, sent at its next start). */
export type EnqueueResult = 'queued' | 'overflow' | 'failed' | 'invalid' | 'spooled';

/** A numbered row the producer holds; `tool` and `requestId` (for the log) and `settle` only until Redis takes it. */
export type HeldRow = { seq: number; entry: string; tool?: string | undefined; requestId?: string | undefined; settle?: ((result: EnqueueResult) => void) | undefined };

/**
 * What the producer's parts share: the rows held, in number order, and what it knows of Redis. With a
 * spool, rows before `sendFrom` are in Redis and not yet known written; without one, a row is forgotten
 * once Redis has it, so `sendFrom` stays 0.
 */
export type ProducerState = {
  held: HeldRow[];
  sendFrom: number;
  /** The number the next recorded row gets. */
  nextSeq: number;
  /** Highest number given up unwritten from a full spool: a resend claims nothing lost below it. */
  evicted: number;
  /** The last number Redis took from this producer; undefined until it took one. */
  lastAccepted: number | undefined;
  /** Set at start and whenever Redis may have lost what it held: the next send resends every held row. */
  rewinding: boolean;
  /** Set when a send failed, cleared when one succeeds. */
  redisAway: boolean;
  /** New rows refused for want of room since Redis went away (one log line, then this count). */
  refusedWhileAway: number;
};

export function settle(row: HeldRow, result: EnqueueResult): void {
  row.settle?.(result);
  row.settle = undefined;
}

/** Rows held that Redis has not taken. */
export const unsent = (state: ProducerState) => state.held.length - state.sendFrom;

/**
 * Whether Redis takes rows now, as far as this process can tell without asking: no send has failed since
 * the last that succeeded, and the client is connected. Before the first answer the client's state decides,
 * so a producer started while Redis is down keeps to its buffer from its first row.
 */
export const redisReachable = (state: ProducerState, redis: Pick<Redis, 'status'>) => !state.redisAway && redis.status === 'ready';

/**
 * Makes room for one more row (issue 44): `capacity` (`AUDIT_BUFFER_CAPACITY`) bounds the rows held while
 * Redis is unreachable. Past it, with a spool, the oldest row Redis already has is forgotten (design 8.4;
 * a later resend declares it, so it is counted lost only if it never arrives); with none to forget, a new
 * row is refused only while Redis is unreachable. While Redis answers, a burst is held whole and sent in
 * larger runs: never dropped for want of room.
 */
export function makeRoom(state: ProducerState, capacity: number, spooling: boolean, reachable: boolean): boolean {
  if (state.held.length < capacity) return true;
  if (spooling && state.sendFrom > 0) {
    state.evicted = Math.max(state.evicted, state.held.shift()!.seq);
    state.sendFrom -= 1;
    return true;
  }
  return reachable;
}
