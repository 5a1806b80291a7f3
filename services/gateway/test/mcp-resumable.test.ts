import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import { SSE_RETRY_MS } from '../src/mcp/mcp-routes.ts';
import type { RunningGateway } from '../src/service.ts';
import { rawInitialize, rawMcp, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let key: string;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  key = await createTestAgent(testEnv.db, { name: 'resuming', sectors: ['finance'] });
});
afterAll(async () => gateway.close());

type SseEvent = { id?: string; retry?: string; data: string };

function eventsOf(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event: SseEvent = { data: '' };
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(': ');
        const value = rest.join(': ');
        if (field === 'id') event.id = value;
        else if (field === 'retry') event.retry = value;
        else if (field === 'data') event.data += value;
      }
      return event;
    });
}

// Priming events go to clients of protocol 2025-11-25 or later (older ones cannot read an empty data line).
const headers = (session: string) => ({ 'mcp-session-id': session, authorization: `Bearer ${key}`, 'mcp-protocol-version': '2025-11-25' });
const describeContext = (session: string, id: number) =>
  rawMcp(gateway.address, { headers: headers(session), body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'describe_context', arguments: {} } } });

/** GET /mcp with Last-Event-ID: the status and the events that came before `until` matched (or the body closed). */
async function resume(session: string, lastEventId: string, until: (events: SseEvent[]) => boolean) {
  const controller = new AbortController();
  const response = await fetch(`${gateway.address}/mcp`, {
    headers: { ...headers(session), accept: 'text/event-stream', 'last-event-id': lastEventId },
    signal: controller.signal,
  });
  if (response.status !== 200 || !response.body) return { status: response.status, events: [] as SseEvent[], text: await response.text() };
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  const deadline = Date.now() + 5_000;
  while (!until(eventsOf(text)) && Date.now() < deadline) {
    const chunk = await Promise.race([reader.read(), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 200))]);
    if (chunk?.done) break;
    if (chunk?.value) text += chunk.value;
  }
  controller.abort();
  return { status: response.status, events: eventsOf(text), text };
}

describe('resumable SSE responses (MCP transport: Last-Event-ID)', () => {
  it('gives every SSE answer event ids and a retry hint', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await describeContext(session, 2);
    const events = eventsOf(answer.text);
    expect(events[0]).toMatchObject({ retry: String(SSE_RETRY_MS), data: '' });
    expect(events.every((event) => typeof event.id === 'string' && event.id.length > 0)).toBe(true);
    expect(JSON.parse(events.at(-1)?.data ?? '{}')).toMatchObject({ id: 2, result: {} });
  });

  it('replays what a dropped response stream missed to a client reconnecting with Last-Event-ID', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await describeContext(session, 3);
    const [priming, response] = eventsOf(answer.text);
    // As if the stream dropped right after the priming event: the answer comes again, under its own id.
    const resumed = await resume(session, priming?.id as string, (events) => events.some((event) => event.data !== ''));
    expect(resumed.status).toBe(200);
    const replayed = resumed.events.filter((event) => event.data !== '');
    expect(replayed).toEqual([{ id: response?.id, data: response?.data }]);
    expect(JSON.parse(replayed[0]?.data ?? '{}')).toMatchObject({ id: 3, result: { content: [{ type: 'text' }] } });
  });

  it("replays nothing of session B's events on session A, even by B's own event id", async () => {
    const sessionA = await rawInitialize(gateway.address, key);
    const sessionB = await rawInitialize(gateway.address, key);
    await describeContext(sessionA, 4);
    const [primingB] = eventsOf((await describeContext(sessionB, 4)).text);
    const crossed = await resume(sessionA, primingB?.id as string, (events) => events.some((event) => event.data !== ''));
    expect(crossed.status).not.toBe(200);
    expect(crossed.text).not.toContain('"result"');
    // B itself still gets its answer.
    const own = await resume(sessionB, primingB?.id as string, (events) => events.some((event) => event.data !== ''));
    expect(own.events.filter((event) => event.data !== '')).toHaveLength(1);
  });
});
