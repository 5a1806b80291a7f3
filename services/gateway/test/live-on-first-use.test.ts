import { describe, expect, it, vi } from 'vitest';
import { openLiveOnFirstUse, type ClosableLiveRequester } from '../src/live/live-on-first-use.ts';

// Issue 38: the gateway's idle memory. The live queue (BullMQ, its connections) is opened on the first
// live request, not at start; what the requests get back is unchanged.
const CONNECTION = '00000000-0000-0000-0000-0000000000c1';
const fetchRequest = { connectionId: CONNECTION, object: 'home.entity', id: 'switch.coffee_maker' };
const OPEN_WITHIN = { openTimeoutMs: 5_000 };
const actionRequest = { connectionId: CONNECTION, name: 'home.switch.turn_on', arguments: { entity_id: 'switch.coffee_maker' } };

function fakeRequester(): ClosableLiveRequester & { closes: number } {
  const requester = {
    closes: 0,
    fetchLive: vi.fn(async () => ({ rows: [{ entity_id: 'switch.coffee_maker', state: 'on' }] })),
    invokeAction: vi.fn(async () => ({ ok: true as const, result: 'done' })),
    async close() {
      requester.closes += 1;
    },
  };
  return requester;
}

describe('the live requester opened on first use', () => {
  it('opens nothing until the first request, then answers it with what the real requester answers', async () => {
    const real = fakeRequester();
    const open = vi.fn(async () => real);
    const live = openLiveOnFirstUse(open, OPEN_WITHIN);
    expect(open).not.toHaveBeenCalled();

    await expect(live.fetchLive(fetchRequest)).resolves.toEqual({ rows: [{ entity_id: 'switch.coffee_maker', state: 'on' }] });
    expect(real.fetchLive).toHaveBeenCalledWith(fetchRequest);
    await expect(live.invokeAction(actionRequest)).resolves.toEqual({ ok: true, result: 'done' });
    expect(real.invokeAction).toHaveBeenCalledWith(actionRequest);
    expect(open).toHaveBeenCalledTimes(1);
  });

  it('opens once for first requests that arrive together', async () => {
    const real = fakeRequester();
    const { promise: opened, resolve } = Promise.withResolvers<ClosableLiveRequester>();
    const open = vi.fn(() => opened);
    const live = openLiveOnFirstUse(open, OPEN_WITHIN);
    const answers = Promise.all([live.fetchLive(fetchRequest), live.invokeAction(actionRequest), live.fetchLive(fetchRequest)]);
    resolve(real);
    await answers;
    expect(open).toHaveBeenCalledTimes(1);
    expect(real.fetchLive).toHaveBeenCalledTimes(2);
  });

  it('fails the requests of an opening that failed, and opens again on the next request', async () => {
    const real = fakeRequester();
    const open = vi.fn<() => Promise<ClosableLiveRequester>>().mockRejectedValueOnce(new Error('redis refused the connection')).mockResolvedValue(real);
    const live = openLiveOnFirstUse(open, OPEN_WITHIN);
    await expect(live.fetchLive(fetchRequest)).rejects.toThrow('redis refused the connection');
    await expect(live.fetchLive(fetchRequest)).resolves.toEqual({ rows: [{ entity_id: 'switch.coffee_maker', state: 'on' }] });
    expect(open).toHaveBeenCalledTimes(2);
  });

  it('closes what it opened, once, and opens nothing when it was never used', async () => {
    const unused = vi.fn(async () => fakeRequester());
    await openLiveOnFirstUse(unused, OPEN_WITHIN).close();
    expect(unused).not.toHaveBeenCalled();

    const real = fakeRequester();
    const live = openLiveOnFirstUse(async () => real, OPEN_WITHIN);
    await live.fetchLive(fetchRequest);
    await Promise.all([live.close(), live.close()]);
    expect(real.closes).toBe(1);
  });

  it('closes a requester still opening when closed, and refuses requests after close without opening again', async () => {
    const real = fakeRequester();
    const { promise: opened, resolve } = Promise.withResolvers<ClosableLiveRequester>();
    const open = vi.fn(() => opened);
    const live = openLiveOnFirstUse(open, OPEN_WITHIN);
    const first = live.fetchLive(fetchRequest);
    const closing = live.close();
    resolve(real);
    await closing;
    await first.catch(() => undefined);
    expect(real.closes).toBe(1);
    await expect(live.invokeAction(actionRequest)).rejects.toThrow('closed');
    expect(open).toHaveBeenCalledTimes(1);
  });

  it('fails a request whose opening outlasts the live timeout, and serves a later request once the opening is done', async () => {
    const real = fakeRequester();
    const { promise: opened, resolve } = Promise.withResolvers<ClosableLiveRequester>();
    const open = vi.fn(() => opened);
    const live = openLiveOnFirstUse(open, { openTimeoutMs: 50 });
    await expect(live.fetchLive(fetchRequest)).rejects.toThrow('the live queue could not be opened within 50 ms');
    resolve(real);
    await expect(live.invokeAction(actionRequest)).resolves.toEqual({ ok: true, result: 'done' });
    expect(open).toHaveBeenCalledTimes(1);
  });

  it('does not hang at close on an opening that never ends, and closes what it opens later', async () => {
    const real = fakeRequester();
    const { promise: opened, resolve } = Promise.withResolvers<ClosableLiveRequester>();
    const live = openLiveOnFirstUse(() => opened, { openTimeoutMs: 50 });
    await expect(live.fetchLive(fetchRequest)).rejects.toThrow('could not be opened');
    await live.close();
    expect(real.closes).toBe(0);
    resolve(real);
    await vi.waitFor(() => expect(real.closes).toBe(1));
  });
});
