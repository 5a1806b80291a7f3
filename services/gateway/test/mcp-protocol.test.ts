import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { upsertRecords } from '@pcg/shared/cache';
import { createTestAgent, insertTestConnection, collectQueuedAuditRows, takeQueuedAuditRows, useTestEnvironment } from '@pcg/testkit/testing';
import type { RunningGateway } from '../src/service.ts';
import { connectAgent, INITIALIZE, messageOf, rawInitialize, rawMcp, rpcError, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let key: string;

const errorBody = (error: { code: number; message: string }, id: number | null = null, data?: string) => rpcError(error.code, error.message, id, data);
/** Spec 7's table, word for word: the code and message of each /mcp error answer. */
const SPEC_7 = {
  unauthorized: { code: -32001, message: 'Unauthorized' },
  missingSession: { code: -32000, message: 'Missing or invalid Mcp-Session-Id' },
  unknownSession: { code: -32001, message: 'Unknown session' },
  notFound: { code: -32601, message: 'Not found' },
} as const;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  key = await createTestAgent(testEnv.db, { name: 'claude', sectors: ['finance', 'home'] });
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, {
    object: 'finance.transaction',
    connectionId: bank,
    source: 'plaid',
    records: Array.from({ length: 60 }, (_, i) => ({ source_id: `t${i}`, amount: `-${i}.00`, posted_on: '2026-03-01', pending: false })),
  });
});
afterAll(async () => gateway.close());
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

describe('an agent with the official SDK client', () => {
  it('initializes with the service name, the instructions and tools only', async () => {
    const { client } = await connectAgent(gateway.address, key);
    expect(client.getServerVersion()?.name).toBe('pcg-test-gateway');
    const instructions = client.getInstructions() ?? '';
    for (const phrase of ['describe_context first', 'get_schema', 'notes and fieldDocs', 'ONE object of ONE sector', 'no cross-sector joins', 'has_more: true', 'fetch_live is the only read', 'reading and acting']) {
      expect(instructions).toContain(phrase);
    }
    const capabilities = client.getServerCapabilities() ?? {};
    expect(capabilities.tools).toBeDefined();
    expect(capabilities.resources).toBeUndefined();
    expect(capabilities.prompts).toBeUndefined();
    await client.close();
    // A successful initialize leaves no audit row (spec 6).
    expect((await takeQueuedAuditRows(testEnv.redis)).filter((row) => row.tool === 'initialize')).toEqual([]);
  });

  it('lists the seven tools, each with a described input schema', async () => {
    const { client } = await connectAgent(gateway.address, key);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['describe_context', 'fetch_live', 'get_record', 'get_schema', 'invoke_action', 'list_actions', 'query']);
    const query = tools.find((tool) => tool.name === 'query');
    expect(query?.inputSchema.properties).toHaveProperty('where');
    expect(JSON.stringify(query?.inputSchema)).toContain('description');
    await client.close();
  });

  it('marks the six reads read-only and invoke_action as an act that changes the world (hosted clients decide what to confirm by these)', async () => {
    const { client } = await connectAgent(gateway.address, key);
    const { tools } = await client.listTools();
    const hints = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations]));
    for (const read of ['describe_context', 'get_schema', 'query', 'get_record', 'fetch_live', 'list_actions']) {
      expect(hints[read], read).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    }
    expect(hints.invoke_action).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    // fetch_live is the one read that reaches outside the gateway.
    expect(hints.fetch_live).toMatchObject({ openWorldHint: true });
    expect(hints.query).toMatchObject({ openWorldHint: false });
    await client.close();
  });

  it('calls each tool; answers are one text block of JSON indented two spaces', async () => {
    const { client } = await connectAgent(gateway.address, key);
    const context = await client.callTool({ name: 'describe_context', arguments: {} });
    const [block] = context.content as Array<{ type: string; text: string }>;
    expect(context.content).toHaveLength(1);
    expect(block?.type).toBe('text');
    expect(block?.text).toBe(JSON.stringify(JSON.parse(block?.text ?? ''), null, 2));
    expect(JSON.parse(block?.text ?? '')).toMatchObject({ service: 'pcg-test-gateway', sectors: ['finance', 'home'] });

    const schema = JSON.parse(((await client.callTool({ name: 'get_schema', arguments: { sector: 'finance' } })).content as Array<{ text: string }>)[0]?.text ?? '');
    expect(schema.objects).toHaveLength(3);

    const page = await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', limit: 25 } });
    const result = JSON.parse((page.content as Array<{ text: string }>)[0]?.text ?? '');
    expect(result).toMatchObject({ row_count: 25, has_more: true });
    const next = JSON.parse(((await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', limit: 50, cursor: result.next_cursor } })).content as Array<{ text: string }>)[0]?.text ?? '');
    expect(next).toMatchObject({ row_count: 35, has_more: false });

    const record = await client.callTool({ name: 'get_record', arguments: { object: 'finance.transaction', id: result.rows[0].id } });
    expect(record.isError).toBeFalsy();

    const live = await client.callTool({ name: 'fetch_live', arguments: { object: 'home.entity' } });
    expect(live).toMatchObject({ isError: true, content: [{ type: 'text', text: "no active connection for sector 'home'" }] });

    const actions = JSON.parse(((await client.callTool({ name: 'list_actions', arguments: {} })).content as Array<{ text: string }>)[0]?.text ?? '');
    expect(actions).toEqual({ actions: [] });

    const invoke = await client.callTool({ name: 'invoke_action', arguments: { name: 'home.light.turn_on', arguments: {} } });
    expect(invoke).toMatchObject({ isError: true, content: [{ text: "no active connection for sector 'home'" }] });

    const rows = await collectQueuedAuditRows(testEnv.redis, 8);
    expect(rows.map((row) => row.tool)).toEqual(['describe_context', 'get_schema', 'query', 'query', 'get_record', 'fetch_live', 'list_actions', 'invoke_action']);
    expect(rows.every((row) => row.agentId === 'claude')).toBe(true);
    await client.close();
  });

  it('is refused an ungranted sector with a tool error and a deny row, not a broken session', async () => {
    const { client } = await connectAgent(gateway.address, key);
    const refused = await client.callTool({ name: 'query', arguments: { object: 'mail.message' } });
    expect(refused).toMatchObject({ isError: true, content: [{ type: 'text', text: "access denied: sector 'mail' is not granted to this agent (granted: finance, home)" }] });
    const refusedAction = await client.callTool({ name: 'invoke_action', arguments: { name: 'mail.send.now' } });
    expect(refusedAction.isError).toBe(true);
    const notASector = await client.callTool({ name: 'invoke_action', arguments: { name: 'homes.light.turn_on' } });
    expect((notASector.content as Array<{ text: string }>)[0]?.text).toMatch(/'homes' is not a sector/);
    const listed = await client.callTool({ name: 'list_actions', arguments: { sector: 'mail' } });
    expect(listed.isError).toBe(true);
    // The session still works.
    expect((await client.callTool({ name: 'describe_context', arguments: {} })).isError).toBeFalsy();
    // The row is spooled before the answer and reaches Redis a moment later (design 8.4): wait for it.
    const rows = await collectQueuedAuditRows(testEnv.redis, 5);
    expect(rows.slice(0, 4)).toMatchObject([
      { tool: 'query', decision: 'deny', sector: 'mail', denyReason: 'sector not granted' },
      { tool: 'invoke_action', decision: 'deny', sector: 'mail' },
      { tool: 'invoke_action', decision: 'deny', sector: null, denyReason: 'unknown sector' },
      { tool: 'list_actions', decision: 'deny', sector: 'mail' },
    ]);
    await client.close();
  });

  it('audits a call with invalid arguments as allow with outcome error', async () => {
    const { client } = await connectAgent(gateway.address, key);
    const bad = await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', where: 'everything' } });
    expect(bad.isError).toBe(true);
    expect((bad.content as Array<{ text: string }>)[0]?.text).toMatch(/^where/);
    // The row is spooled before the answer and reaches Redis a moment later (design 8.4): wait for it.
    expect((await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.tool === 'query')).at(-1)).toMatchObject({ tool: 'query', decision: 'allow', outcome: 'error' });
    await client.close();
  });
});

describe('/mcp answers of spec 7, raw HTTP', () => {
  it.each([
    ['no Authorization', {}, undefined],
    ['an unknown key', { authorization: `Bearer pcg_${'x'.repeat(43)}` }, 'access denied: unknown agent'],
    ['a malformed key', { authorization: 'Bearer hello' }, 'access denied: unknown agent'],
    ['Bearer with no key', { authorization: 'Bearer ' }, undefined],
    ['another scheme', { authorization: `Basic ${Buffer.from(`u:${'k'}`).toString('base64')}` }, undefined],
  ])('initialize with %s → 401 -32001 Unauthorized, the refusal text in data', async (_label, headers, data) => {
    const answer = await rawMcp(gateway.address, { headers, body: INITIALIZE });
    expect(answer.status).toBe(401);
    expect(answer.json()).toEqual(errorBody(SPEC_7.unauthorized, 1, data));
    expect(answer.headers.get('www-authenticate')).toBeNull();
  });

  it('accepts the header name and the word Bearer in any case', async () => {
    const answer = await rawMcp(gateway.address, { headers: { AUTHORIZATION: `bEaReR ${key}` }, body: INITIALIZE });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('records a refused presented key as a deny row with agent_id null, and no row for a call with no key (bridge off)', async () => {
    await rawMcp(gateway.address, { headers: {}, body: INITIALIZE });
    await rawMcp(gateway.address, { headers: { authorization: `Bearer pcg_${'y'.repeat(43)}` }, body: INITIALIZE });
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.tool === 'initialize');
    expect(rows).toMatchObject([{ agentId: null, tool: 'initialize', decision: 'deny', denyReason: 'access denied: unknown agent', sector: null }]);
  });

  it('answers a request without a session id with 400 -32000', async () => {
    const post = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
    expect(post.status).toBe(400);
    expect(post.json()).toEqual(errorBody(SPEC_7.missingSession, 2));
    const get = await rawMcp(gateway.address, { method: 'GET', headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(400);
    expect(get.json()).toEqual(errorBody(SPEC_7.missingSession));
    const malformed = await rawMcp(gateway.address, { headers: { 'mcp-session-id': 'not-a-session' }, body: { jsonrpc: '2.0', id: 3, method: 'tools/list' } });
    expect(malformed.json()).toEqual(errorBody(SPEC_7.missingSession, 3));
  });

  it("answers a newer client's server/discover probe with 400, not 5xx", async () => {
    const probe = await rawMcp(gateway.address, { body: { jsonrpc: '2.0', id: 9, method: 'server/discover' } });
    expect(probe.status).toBe(400);
  });

  it('answers a well-formed id that names no session with 404 -32001 on POST, GET and DELETE', async () => {
    const unknown = { 'mcp-session-id': '00000000-0000-4000-8000-000000000000' };
    const post = await rawMcp(gateway.address, { headers: unknown, body: { jsonrpc: '2.0', id: 4, method: 'tools/list' } });
    const get = await rawMcp(gateway.address, { method: 'GET', headers: { ...unknown, accept: 'text/event-stream' } });
    const del = await rawMcp(gateway.address, { method: 'DELETE', headers: unknown });
    expect([post.status, get.status, del.status]).toEqual([404, 404, 404]);
    expect(post.json()).toEqual(errorBody(SPEC_7.unknownSession, 4));
    expect(del.json()).toEqual(errorBody(SPEC_7.unknownSession));
  });

  it('ends a session on DELETE; the id is unknown afterwards', async () => {
    const id = await rawInitialize(gateway.address, key);
    const session = { 'mcp-session-id': id, authorization: `Bearer ${key}` };
    const list = await rawMcp(gateway.address, { headers: session, body: { jsonrpc: '2.0', id: 5, method: 'tools/list' } });
    expect(list.status).toBe(200);
    expect(messageOf(list.text)).toHaveProperty('result.tools');
    expect((await rawMcp(gateway.address, { method: 'DELETE', headers: session })).status).toBe(200);
    const after = await rawMcp(gateway.address, { headers: session, body: { jsonrpc: '2.0', id: 6, method: 'tools/list' } });
    expect(after.status).toBe(404);
  });

  it('answers a live session\'s request that carries no credential with 401 -32001, on POST, GET and DELETE, and keeps the session', async () => {
    const id = await rawInitialize(gateway.address, key);
    const bare = { 'mcp-session-id': id };
    const post = await rawMcp(gateway.address, { headers: bare, body: { jsonrpc: '2.0', id: 8, method: 'tools/list' } });
    const get = await rawMcp(gateway.address, { method: 'GET', headers: { ...bare, accept: 'text/event-stream' } });
    const del = await rawMcp(gateway.address, { method: 'DELETE', headers: bare });
    expect([post.status, get.status, del.status]).toEqual([401, 401, 401]);
    expect(post.json()).toEqual(errorBody(SPEC_7.unauthorized, 8));
    expect(post.headers.get('www-authenticate')).toBeNull();
    const withKey = await rawMcp(gateway.address, { headers: { ...bare, authorization: `Bearer ${key}` }, body: { jsonrpc: '2.0', id: 9, method: 'tools/list' } });
    expect(withKey.status).toBe(200);
  });

  it('does not serve a session to another agent\'s key', async () => {
    const id = await rawInitialize(gateway.address, key);
    const other = await createTestAgent(testEnv.db, { name: 'intruder', sectors: ['mail'] });
    const answer = await rawMcp(gateway.address, { headers: { 'mcp-session-id': id, authorization: `Bearer ${other}` }, body: { jsonrpc: '2.0', id: 7, method: 'tools/list' } });
    expect(answer.status).toBe(404);
  });

  it.each([['GET', '/'], ['POST', '/mcp/other'], ['PUT', '/mcp'], ['GET', '/.well-known/oauth-protected-resource']])(
    'answers %s %s with 404 -32601 Not found',
    async (method, path) => {
      const answer = await rawMcp(gateway.address, { method, path, headers: {} });
      expect(answer.status).toBe(404);
      expect(answer.json()).toEqual(errorBody(SPEC_7.notFound));
    },
  );
});
