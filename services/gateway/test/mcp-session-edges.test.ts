import { sql } from 'slonik';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openQueue } from '@pcg/shared/queues';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { createTestAgent, insertTestConnection, collectQueuedAuditRows, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import type { RunningGateway } from '../src/service.ts';
import { INITIALIZE, MCP_HEADERS, messageOf, rawInitialize, rawMcp, rpcError, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
/** The gateway's clock runs this far ahead of the real one; tests move it. */
let clockOffsetMs = 0;
const DAY_MS = 86_400_000;

beforeAll(async () => {
  // fetch_live on a connection no sync-worker serves waits for this long, then fails: a call that stays in flight.
  gateway = await startTestGateway(testEnv, { LIVE_TIMEOUT_MS: '1500' }, { now: () => new Date(Date.now() + clockOffsetMs) });
});
afterAll(async () => gateway.close());
beforeEach(async () => {
  clockOffsetMs = 0;
  await takeQueuedAuditRows(testEnv.redis);
});

const session = (id: string, key: string) => ({ 'mcp-session-id': id, authorization: `Bearer ${key}` });
const toolsList = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
const callTool = (id: number | string, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** The text of a tools/call answer read from its SSE body. */
function toolAnswer(text: string): { id: unknown; isError: boolean; text: string } {
  const message = messageOf(text) as { id: unknown; result: { isError?: boolean; content: Array<{ text: string }> } };
  return { id: message.id, isError: message.result.isError === true, text: message.result.content[0]?.text ?? '' };
}

describe('an empty JSON body on GET and DELETE (issue 12 item 4)', () => {
  const unknown = '00000000-0000-4000-8000-000000000000';

  it.each(['DELETE', 'GET'])('%s with Content-Type: application/json, no body and an unknown session → 404 -32001 Unknown session', async (method) => {
    const answer = await fetch(`${gateway.address}/mcp`, { method, headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'mcp-session-id': unknown } });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual(rpcError(-32001, 'Unknown session'));
  });

  it('ends a live session on such a DELETE, and answers 400 -32000 when the header is missing', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'empty-body', sectors: [] });
    const id = await rawInitialize(gateway.address, key);
    const deleted = await fetch(`${gateway.address}/mcp`, { method: 'DELETE', headers: { 'content-type': 'application/json', ...session(id, key) } });
    expect(deleted.status).toBe(200);
    expect((await rawMcp(gateway.address, { headers: session(id, key), body: toolsList(1) })).status).toBe(404);
    const missing = await fetch(`${gateway.address}/mcp`, { method: 'DELETE', headers: { 'content-type': 'application/json' } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual(rpcError(-32000, 'Missing or invalid Mcp-Session-Id'));
  });

  it('answers a POST with an empty body on a live session with 400 -32700, and the session stays', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'empty-post', sectors: [] });
    const id = await rawInitialize(gateway.address, key);
    const empty = await fetch(`${gateway.address}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, ...session(id, key) } });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual(rpcError(-32700, 'Parse error: empty body'));
    expect((await rawMcp(gateway.address, { headers: session(id, key), body: toolsList(2) })).status).toBe(200);
  });
});

describe('an initialize that carries a session header (issue 12 item 5, docs/decisions.md)', () => {
  it('opens a new session when the header names no session (a stale id kept after a 404)', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'stale-header', sectors: [] });
    const stale = '11111111-1111-4111-8111-111111111111';
    const answer = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}`, 'mcp-session-id': stale }, body: INITIALIZE });
    expect(answer.status).toBe(200);
    const id = answer.headers.get('mcp-session-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(id).not.toBe(stale);
    expect((await rawMcp(gateway.address, { headers: session(id as string, key), body: toolsList(1) })).status).toBe(200);
  });

  it('opens a new session when the header names a live one, and leaves that one open', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'live-header', sectors: [] });
    const first = await rawInitialize(gateway.address, key);
    const answer = await rawMcp(gateway.address, { headers: session(first, key), body: INITIALIZE });
    expect(answer.status).toBe(200);
    const second = answer.headers.get('mcp-session-id') as string;
    expect(second).not.toBe(first);
    expect((await rawMcp(gateway.address, { headers: session(first, key), body: toolsList(1) })).status).toBe(200);
    expect((await rawMcp(gateway.address, { headers: session(second, key), body: toolsList(2) })).status).toBe(200);
  });
});

describe('two requests with one JSON-RPC id in flight on a session (issue 12 item 13)', () => {
  it('answers both: the second at once with 409 -32600, the first with its own result', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'same-id', sectors: ['home'] });
    await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
    const id = await rawInitialize(gateway.address, key);
    // No sync-worker serves the live queue, so this call stays in flight until LIVE_TIMEOUT_MS.
    const first = rawMcp(gateway.address, { headers: session(id, key), body: callTool(7, 'fetch_live', { object: 'home.entity' }) });
    const queue = await openQueue({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'live', createCapturingLogger().log, 'probe');
    await waitFor(async () => ((await queue.getJobCountByTypes('waiting', 'active')) > 0 ? true : undefined), 5_000, 'the first call to reach the live queue');
    await queue.close();
    const second = await rawMcp(gateway.address, { headers: session(id, key), body: callTool(7, 'describe_context') });
    expect(second.status).toBe(409);
    expect(second.json()).toEqual(rpcError(-32600, 'duplicate request id in flight', 7));
    // A string id "7" is another id: it is served.
    expect(toolAnswer((await rawMcp(gateway.address, { headers: session(id, key), body: callTool('7', 'describe_context') })).text)).toMatchObject({ id: '7', isError: false });
    const firstAnswer = await first;
    expect(firstAnswer.status).toBe(200);
    // Its one connection never answered (no sync-worker): the live read reports that connection's failure.
    const answered = toolAnswer(firstAnswer.text);
    expect(answered).toMatchObject({ id: 7, isError: false });
    expect(JSON.parse(answered.text)).toMatchObject({ live: true, rows: [], connections: [{ status: 'failed' }] });
    // Once answered, the id is free again.
    expect(toolAnswer((await rawMcp(gateway.address, { headers: session(id, key), body: callTool(7, 'describe_context') })).text)).toMatchObject({ id: 7, isError: false });
  });

  it('refuses a batch that repeats an id, and answers every id of a well-formed batch', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'batch-ids', sectors: [] });
    const id = await rawInitialize(gateway.address, key);
    const repeated = await rawMcp(gateway.address, { headers: session(id, key), body: [toolsList(3), toolsList(3)] });
    expect(repeated.status).toBe(409);
    const fine = await rawMcp(gateway.address, { headers: session(id, key), body: [toolsList(4), toolsList(5)] });
    expect(fine.status).toBe(200);
    const answered = fine.text.split('\n').filter((line) => line.startsWith('data: ') && line.length > 6).map((line) => (JSON.parse(line.slice(6)) as { id: number }).id);
    expect(answered.sort()).toEqual([4, 5]);
  });

  it('answers every one of 40 concurrent calls that reuse 20 ids', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'many-same-ids', sectors: [] });
    const id = await rawInitialize(gateway.address, key);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, n) => rawMcp(gateway.address, { headers: session(id, key), body: callTool(n % 20, 'describe_context') })));
    expect(answers.every((answer) => answer.status === 200 || answer.status === 409)).toBe(true);
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(20);
  });
});

describe('the refusal texts of spec 3.1 and 7 reach the agent (issue 12 item 17)', () => {
  it.each([
    ['revoked', async (name: string) => {
      await testEnv.db.query(sql.unsafe`UPDATE agents SET revoked_at = now(), generation = generation + 1 WHERE name = ${name}`);
    }, 'access denied: revoked'],
    ['expired', async () => {
      clockOffsetMs = 2 * DAY_MS;
    }, 'access denied: expired'],
  ])('initialize with a key %s: 401 -32001 Unauthorized with the exact text in data, and as the deny row\'s reason', async (state, act, text) => {
    const name = `refused-${state}`;
    const key = await createTestAgent(testEnv.db, { name, sectors: [], expiresInDays: 1 });
    await act(name);
    const answer = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });
    expect(answer.status).toBe(401);
    expect(answer.json()).toEqual(rpcError(-32001, 'Unauthorized', 1, text));
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.tool === 'initialize');
    expect(rows).toMatchObject([{ agentId: null, decision: 'deny', denyReason: text }]);
  });

  it('a key that expires mid-session answers tool calls with the tool error access denied: expired', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'dies-mid-session', sectors: ['finance'], expiresInDays: 1 });
    const id = await rawInitialize(gateway.address, key);
    expect(toolAnswer((await rawMcp(gateway.address, { headers: session(id, key), body: callTool(1, 'describe_context') })).text).isError).toBe(false);
    clockOffsetMs = 2 * DAY_MS;
    const after = await rawMcp(gateway.address, { headers: session(id, key), body: callTool(2, 'query', { object: 'finance.account' }) });
    expect(after.status).toBe(200);
    expect(toolAnswer(after.text)).toEqual({ id: 2, isError: true, text: 'access denied: expired' });
  });
});
