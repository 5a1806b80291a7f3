import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import { SSE_RETRY_MS } from '../src/mcp/mcp-routes.ts';
import type { RunningGateway } from '../src/service.ts';
import { INITIALIZE, rawInitialize, rawMcp, startTestGateway } from './gateway-harness.ts';

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

/** Opens a session whose initialize asks for `protocolVersion`; the session id. */
async function initializeAt(protocolVersion: string): Promise<string> {
  const answer = await rawMcp(gateway.address, {
    headers: { authorization: `Bearer ${key}` },
    body: { ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion } },
  });
  const id = answer.headers.get('mcp-session-id');
  if (answer.status !== 200 || !id) throw new Error(`initialize failed: ${answer.status} ${answer.text}`);
  return id;
}

/** A tools/call on a session sent without `MCP-Protocol-Version`, as some clients do. */
const describeContextWithoutVersion = (session: string, id: number) =>
  rawMcp(gateway.address, {
    headers: { 'mcp-session-id': session, authorization: `Bearer ${key}` },
    body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'describe_context', arguments: {} } },
  });

describe("the priming event follows the session's negotiated version, not the request's header (issue 38 item 1)", () => {
  it('gives a 2025-11-25 session whose client omits MCP-Protocol-Version its priming event (id, retry), and the answer resumes from it', async () => {
    const session = await initializeAt('2025-11-25');
    const answer = await describeContextWithoutVersion(session, 5);
    expect(answer.status).toBe(200);
    const [priming, response] = eventsOf(answer.text);
    expect(priming).toMatchObject({ retry: String(SSE_RETRY_MS), data: '' });
    expect(priming?.id).toEqual(expect.any(String));
    const resumed = await resume(session, priming?.id as string, (events) => events.some((event) => event.data !== ''));
    expect(resumed.status).toBe(200);
    expect(resumed.events.filter((event) => event.data !== '')).toEqual([{ id: response?.id, data: response?.data }]);
  });

  it.each(['2025-06-18', '2025-03-26'])('gives a %s session no priming event, whether or not the request names its version', async (version) => {
    const session = await initializeAt(version);
    const withoutHeader = await describeContextWithoutVersion(session, 6);
    const withHeader = await rawMcp(gateway.address, {
      headers: { 'mcp-session-id': session, authorization: `Bearer ${key}`, 'mcp-protocol-version': version },
      body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'describe_context', arguments: {} } },
    });
    for (const answer of [withoutHeader, withHeader]) {
      expect(answer.status).toBe(200);
      const events = eventsOf(answer.text);
      expect(events.some((event) => event.data === '' || event.retry !== undefined)).toBe(false);
      expect(JSON.parse(events.at(-1)?.data ?? '{}')).toMatchObject({ result: { content: [{ type: 'text' }] } });
    }
  });
});

describe('resuming after the events expired (issue 38 item 2)', () => {
  it('answers a Last-Event-ID whose events this session no longer keeps with a status and text saying they expired and to send the request again', async () => {
    const session = await initializeAt('2025-11-25');
    const [firstPriming] = eventsOf((await describeContext(session, 1)).text);
    // Each answer is two events (priming, result); a session keeps 64 events at most, oldest first out.
    for (let id = 2; id <= 40; id += 1) await describeContext(session, id);
    const resumed = await resume(session, firstPriming?.id as string, () => true);
    expect(resumed.status).toBe(410);
    const body = JSON.parse(resumed.text) as { error: { message: string } };
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
    expect(body.error.message).toMatch(/expired/i);
    expect(body.error.message).toMatch(/send the request again/i);
    expect(body.error.message).not.toMatch(/invalid|format/i);
  });
});
