import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { createSessionEventStore } from '../src/mcp/session-event-store.ts';
import { SessionTransport } from '../src/mcp/session-transport.ts';
import type { RunningGateway } from '../src/service.ts';
import { INITIALIZE, rawInitialize, rawMcp, rpcError, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let switchedOff: RunningGateway;
let key: string;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  switchedOff = await startTestGateway(testEnv, { MCP_MODERN_ERA: 'false' });
  key = await createTestAgent(testEnv.db, { name: 'transporting', sectors: ['finance'] });
});
afterAll(async () => {
  await switchedOff.close();
  await gateway.close();
});

const onSession = (session: string, extra: Record<string, string> = {}) => ({ 'mcp-session-id': session, authorization: `Bearer ${key}`, ...extra });
const describeContext = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'describe_context', arguments: {} } });

/** The JSON-RPC messages of an SSE body, priming events left out. */
const messagesOf = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 6)
    .map((line) => JSON.parse(line.slice(6)) as { id?: unknown; result?: unknown; error?: unknown });

/** The id of the first event of an SSE body (the priming event). */
const firstEventId = (text: string) => /^id: (.+)$/m.exec(text)?.[1] as string;

describe("a session's own transport: the rules of MCP's Streamable HTTP transport (2025 lane)", () => {
  it('refuses a POST whose Accept lacks text/event-stream with 406 and says what the client must accept', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { headers: onSession(session, { accept: 'application/json' }), body: describeContext(2) });
    expect(answer.status).toBe(406);
    expect(answer.json()).toEqual(rpcError(-32000, 'Not Acceptable: Client must accept both application/json and text/event-stream'));
  });

  it('refuses a GET stream whose Accept lacks text/event-stream with 406', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { method: 'GET', headers: onSession(session, { accept: 'application/json' }) });
    expect(answer.status).toBe(406);
    expect(answer.json()).toEqual(rpcError(-32000, 'Not Acceptable: Client must accept text/event-stream'));
  });

  it('refuses a batch of more than 100 messages with 400 -32600, and answers one of 100', async () => {
    const session = await rawInitialize(gateway.address, key);
    const tooMany = await rawMcp(gateway.address, { headers: onSession(session), body: Array.from({ length: 101 }, (_, index) => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: index, progress: 1 } })) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json()).toEqual(rpcError(-32600, 'Invalid Request: Batch must not exceed 100 messages'));
    const hundred = await rawMcp(gateway.address, { headers: onSession(session), body: Array.from({ length: 100 }, (_, index) => ({ jsonrpc: '2.0', id: 1000 + index, method: 'ping' })) });
    expect(hundred.status).toBe(200);
    expect(messagesOf(hundred.text).map((message) => message.id)).toEqual(Array.from({ length: 100 }, (_, index) => 1000 + index));
  });

  it('refuses a message that is not JSON-RPC (an id that is neither a string nor an integer) with 400 -32700', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { headers: onSession(session), body: { jsonrpc: '2.0', id: 1.5, method: 'ping' } });
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual(rpcError(-32700, 'Parse error: Invalid JSON-RPC message'));
  });

  it('refuses an initialize inside a batch on an open session with 400 -32600, and the session goes on', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { headers: onSession(session), body: [{ ...INITIALIZE, id: 9 }] });
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual(rpcError(-32600, 'Invalid Request: Server already initialized'));
    expect((await rawMcp(gateway.address, { headers: onSession(session), body: describeContext(10) })).status).toBe(200);
  });

  it('takes notifications alone with 202 and no body', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { headers: onSession(session), body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    expect(answer.status).toBe(202);
    expect(answer.text).toBe('');
  });

  it('answers a batch of two requests on one SSE stream that ends after the second answer', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { headers: onSession(session), body: [describeContext(21), { jsonrpc: '2.0', id: 22, method: 'tools/list' }] });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/event-stream');
    expect(answer.headers.get('mcp-session-id')).toBe(session);
    expect(messagesOf(answer.text).map((message) => message.id).sort()).toEqual([21, 22]);
  });

  it('allows one GET stream a session: a second is refused with 409 while the first is open, and taken once it closed', async () => {
    const session = await rawInitialize(gateway.address, key);
    const open = () => {
      const controller = new AbortController();
      const response = fetch(`${gateway.address}/mcp`, { headers: onSession(session, { accept: 'text/event-stream' }), signal: controller.signal });
      return { response, controller };
    };
    const first = open();
    expect((await first.response).status).toBe(200);
    expect((await first.response).headers.get('content-type')).toBe('text/event-stream');
    const second = await rawMcp(gateway.address, { method: 'GET', headers: onSession(session, { accept: 'text/event-stream' }) });
    expect(second.status).toBe(409);
    expect(second.json()).toEqual(rpcError(-32000, 'Conflict: Only one SSE stream is allowed per session'));
    first.controller.abort();
    let third: Awaited<ReturnType<typeof open>['response']> | undefined;
    for (let attempt = 0; attempt < 50 && third?.status !== 200; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const next = open();
      third = await next.response;
      next.controller.abort();
    }
    expect(third?.status).toBe(200);
  });

  it('ends a resumed stream after its replay when its requests were all answered (no stream left open for nothing)', async () => {
    const session = await rawInitialize(gateway.address, key);
    const first = await rawMcp(gateway.address, { headers: onSession(session, { 'mcp-protocol-version': '2025-11-25' }), body: describeContext(31) });
    const resumed = await fetch(`${gateway.address}/mcp`, {
      headers: onSession(session, { accept: 'text/event-stream', 'last-event-id': firstEventId(first.text) }),
      signal: AbortSignal.timeout(5_000),
    });
    expect(resumed.status).toBe(200);
    // The body ends: read whole within the timeout.
    expect(messagesOf(await resumed.text()).map((message) => message.id)).toEqual([31]);
  });

  it('refuses a Last-Event-ID this session never gave out with 400, saying so', async () => {
    const session = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { method: 'GET', headers: onSession(session, { accept: 'text/event-stream', 'last-event-id': 'not-an-event' }) });
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual(rpcError(-32000, 'Unknown Last-Event-ID: it names no event of this session'));
  });

  it('refuses, with the modern era off, a session request naming a protocol version it does not support, listing those it does', async () => {
    const session = await rawInitialize(switchedOff.address, key);
    const answer = await rawMcp(switchedOff.address, { headers: onSession(session, { 'mcp-protocol-version': '2026-07-28' }), body: describeContext(41) });
    expect(answer.status).toBe(400);
    const error = (answer.json() as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32000);
    expect(error.message).toMatch(/^Bad Request: Unsupported protocol version: 2026-07-28 \(supported versions: .*2025-11-25.*\)$/);
  });
});

/** A session transport alone behind a plain Node server that parses POST bodies as the router does. */
async function transportRig(keepAliveMs?: number) {
  const transport = new SessionTransport({ sessionId: 'session-under-test', protocolVersion: '2025-11-25', events: createSessionEventStore(), retryMs: 1000, keepAliveMs });
  const delivered: Array<{ message: unknown; extra?: MessageExtraInfo }> = [];
  transport.onmessage = (message, extra) => void delivered.push({ message, extra });
  await transport.start();
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => transport.handle(request, response, body === '' ? undefined : JSON.parse(body)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return {
    transport,
    delivered,
    url,
    post: (body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(body) }),
    resume: (lastEventId: string) => fetch(url, { headers: { accept: 'text/event-stream', 'last-event-id': lastEventId } }),
    async close() {
      await transport.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

type TransportRig = Awaited<ReturnType<typeof transportRig>>;

/** Runs `use` against a fresh rig and closes it whatever happens; the closed rig, for checks after. */
async function withRig(use: (rig: TransportRig) => Promise<void>, keepAliveMs?: number): Promise<TransportRig> {
  const rig = await transportRig(keepAliveMs);
  try {
    await use(rig);
  } finally {
    await rig.close();
  }
  return rig;
}

/** POSTs a ping the rig's transport delivers and nobody answers yet. */
async function postPending(rig: TransportRig, id: number): Promise<Response> {
  const posted = await rig.post({ jsonrpc: '2.0', id, method: 'ping' });
  await waitFor(() => rig.delivered.find((each) => (each.message as { id?: unknown }).id === id), 2_000, 'the request to be delivered');
  return posted;
}

/** Reads a streamed body until `done` holds for what has come. */
async function readUntil(response: Response, done: (text: string) => boolean): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  while (!done(text)) {
    const chunk = await reader.read();
    if (chunk.done) break;
    text += chunk.value;
  }
  await reader.cancel();
  return text;
}

const answerTo = (id: number) => ({ jsonrpc: '2.0' as const, id, result: { content: [{ type: 'text' as const, text: `answer ${id}` }] } });

describe("a session transport's resumable streams (MCP transports: resumability and redelivery)", () => {
  it('ends a POST stream when the server asks (closeSSEStream) and gives the later answer to the client resuming from the priming event', async () => {
    await withRig(async (rig) => {
      const posted = await postPending(rig, 7);
      expect(posted.status).toBe(200);
      rig.delivered[0]?.extra?.closeSSEStream?.();
      const primed = await posted.text();
      expect(primed).toMatch(/^id: \S+\nretry: 1000\ndata: \n\n$/);
      await rig.transport.send(answerTo(7));
      const resumed = await rig.resume(firstEventId(primed));
      expect(resumed.status).toBe(200);
      expect(messagesOf(await resumed.text())).toEqual([answerTo(7)]);
      expect(rig.transport.openStreams).toBe(0);
    });
  });

  it('refuses to resume a stream that still has its connection with 409, and answers on that connection', async () => {
    await withRig(async (rig) => {
      const posted = await postPending(rig, 8);
      const reader = (posted.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
      const priming = (await reader.read()).value as string;
      const conflict = await rig.resume(firstEventId(priming));
      expect(conflict.status).toBe(409);
      expect(await conflict.json()).toEqual(rpcError(-32000, 'Conflict: Stream already has an active connection'));
      await rig.transport.send(answerTo(8));
      let rest = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += chunk.value;
      expect(messagesOf(rest)).toEqual([answerTo(8)]);
    });
  });

  it('ends the stream of a request the client cancelled (the SDK sends it no answer), and drops a late answer to it', async () => {
    await withRig(async (rig) => {
      const posted = await postPending(rig, 9);
      const cancelled = await rig.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9, reason: 'no longer needed' } });
      expect(cancelled.status).toBe(202);
      expect(messagesOf(await posted.text())).toEqual([]);
      expect(rig.transport.openStreams).toBe(0);
      await expect(rig.transport.send(answerTo(9))).resolves.toBeUndefined();
    });
  });

  it('answers a method other than POST, GET and DELETE with 405 and the methods it takes', async () => {
    await withRig(async (rig) => {
      const answer = await fetch(rig.url, { method: 'PUT' });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe('GET, POST, DELETE');
      expect(await answer.json()).toEqual(rpcError(-32000, 'Method not allowed.'));
    });
  });

  it('gives a GET stream resumed after a drop the server messages sent while it was away, and keeps it open', async () => {
    await withRig(async (rig) => {
      const first = await fetch(rig.url, { headers: { accept: 'text/event-stream' } });
      await rig.transport.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      const seen = await readUntil(first, (text) => text.includes('list_changed'));
      await waitFor(() => (rig.transport.openStreams === 0 ? true : undefined), 2_000, 'the dropped GET stream to be let go');
      const missed = { jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: 'while away' } };
      await rig.transport.send(missed);
      const resumed = await rig.resume(firstEventId(seen));
      expect(resumed.status).toBe(200);
      const reader = (resumed.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!text.includes('while away')) text += (await reader.read()).value ?? '';
      expect(messagesOf(text)).toEqual([missed]);
      // It is the session's GET stream again: a second one is refused while it is open.
      expect((await fetch(rig.url, { headers: { accept: 'text/event-stream' } })).status).toBe(409);
      await reader.cancel();
    });
  });
});

describe('the GET stream of a session transport', () => {
  it('carries server messages that answer no request, each with an event id, and a keep-alive comment while idle', async () => {
    const closed = await withRig(async (rig) => {
      // The head comes at once, before any event (a client waits for it).
      const response = await fetch(rig.url, { headers: { accept: 'text/event-stream' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('mcp-session-id')).toBe('session-under-test');
      await rig.transport.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      const text = await readUntil(response, (sofar) => /list_changed[^]*: keepalive/.test(sofar));
      expect(text.replace(/^(: keepalive\n\n)+/, '')).toMatch(/^event: message\nid: \S+\ndata: \{"jsonrpc":"2.0","method":"notifications\/tools\/list_changed"\}\n\n: keepalive\n\n/);
    }, 20);
    expect(closed.transport.openStreams).toBe(0);
  });
});
