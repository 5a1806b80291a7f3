import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createSessionEventStore, EVENT_STORE_LIMITS } from '../src/mcp/session-event-store.ts';

/** A full collection, without starting the test process with --expose-gc. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const result = (id: number, text: string): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });


describe('a session event store (Last-Event-ID resumption)', () => {
  it('replays the events of the same stream after the given id, priming events left out', async () => {
    const store = createSessionEventStore();
    const priming = store.store('post-1', null);
    store.store('post-2', null);
    const answer = store.store('post-1', result(1, 'one'));
    store.store('post-2', result(2, 'two'));
    expect(store.streamOf(priming)).toBe('post-1');
    expect(store.after(priming)).toEqual({ streamId: 'post-1', events: [{ id: answer, message: result(1, 'one') }] });
  });

  it("knows nothing of another session's event ids, even one with the same sequence number", async () => {
    const mine = createSessionEventStore();
    const theirs = createSessionEventStore();
    mine.store('_GET_stream', result(1, 'mine'));
    const foreign = theirs.store('_GET_stream', result(1, 'theirs'));
    expect(mine.streamOf(foreign)).toBeUndefined();
    for (const made of ['', 'x', '1', `${foreign}0`, foreign.replace(/-\d+$/, '-999999999999')]) expect(mine.streamOf(made)).toBeUndefined();
  });

  it('stays within its byte, count and age bounds, dropping the oldest first', async () => {
    let clock = 0;
    const store = createSessionEventStore({ maxBytes: 10_000, maxEvents: 50, maxAgeMs: 1_000 }, () => clock);
    const ids: string[] = [];
    for (let index = 0; index < 200; index += 1) ids.push(store.store('s', result(index, 'x'.repeat(1_000))));
    expect(store.bytes).toBeLessThanOrEqual(10_000);
    expect(store.size).toBeLessThan(10);
    expect(store.streamOf(ids[0] as string)).toBeUndefined();
    expect(store.streamOf(ids[199] as string)).toBe('s');
    for (let index = 0; index < 200; index += 1) store.store('s', result(index, 'y'));
    expect(store.size).toBe(50);
    clock = 2_000;
    expect(store.streamOf(ids[199] as string)).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('holds at most EVENT_STORE_LIMITS.maxBytes of messages however many results (measured), or one larger answer alone', async () => {
    const store = createSessionEventStore();
    for (let index = 0; index < 500; index += 1) store.store('s', result(index, 'q'.repeat(5_000)));
    expect(store.bytes).toBeLessThanOrEqual(EVENT_STORE_LIMITS.maxBytes);
    expect(store.size).toBeGreaterThan(1);
    const big = store.store('s', result(501, 'z'.repeat(200_000)));
    expect(store.size).toBe(1);
    expect(store.streamOf(big)).toBe('s');
    store.store('s', result(502, 'small'));
    expect(store.streamOf(big)).toBeUndefined();
    expect(store.bytes).toBeLessThanOrEqual(EVENT_STORE_LIMITS.maxBytes);
  });

  it('keeps no evicted message reachable: the bound is on memory, not only on the count of bytes', async () => {
    const store = createSessionEventStore({ maxBytes: 10_000, maxEvents: 50, maxAgeMs: 60_000 });
    // Stored from a helper, so no local of the test still holds the last message.
    const storeWatched = async (index: number) => {
      const message = result(index, 'e'.repeat(1_000));
      store.store('s', message);
      return new WeakRef(message);
    };
    const evicted: Array<WeakRef<object>> = [];
    for (let index = 0; index < 40; index += 1) evicted.push(await storeWatched(index));
    // Past the count bound, each of these pushes the oldest out: every large one above is evicted.
    for (let index = 0; index < 60; index += 1) store.store('s', result(100 + index, 'k'));
    expect(store.size).toBe(50);
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(evicted.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });
});
