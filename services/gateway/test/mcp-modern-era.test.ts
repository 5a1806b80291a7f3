import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { upsertRecords } from '@pcg/shared/cache';
import { createAgentEventPublisher, createAgentService } from '@pcg/shared/grants';
import { collectQueuedAuditRows, createCapturingLogger, createTestAgent, insertTestConnection, takeQueuedAuditRows, useTestEnvironment } from '@pcg/testkit/testing';
import type { RunningGateway } from '../src/service.ts';
import { connectAgent, INITIALIZE, rawMcp, rpcError, startTestGateway } from './gateway-harness.ts';
import { modernCall, modernHeaders, MODERN_META } from './modern-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let key: string;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  key = await createTestAgent(testEnv.db, { name: 'stateless-agent', sectors: ['finance', 'home'] });
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, {
    object: 'finance.transaction',
    connectionId: bank,
    source: 'plaid',
    records: Array.from({ length: 30 }, (_, i) => ({ source_id: `t${i}`, amount: `-${i}.00`, posted_on: '2026-03-01', pending: false })),
  });
});
afterAll(async () => gateway.close());
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

const consoleAgents = () =>
  createAgentService({ db: testEnv.db, events: createAgentEventPublisher(testEnv.redis, { REDIS_PREFIX: testEnv.redisPrefix }), log: createCapturingLogger().log });

type TextResult = { content: Array<{ type: string; text: string }>; isError?: boolean };
const json = (result: unknown) => JSON.parse((result as TextResult).content[0]?.text ?? '') as { rows: unknown[]; has_more: boolean; next_cursor?: string };

/** The official v2 client pinned to revision 2026-07-28, recording every JSON-RPC method it posts and every session header. */
async function connectModern(bearer: string) {
  const posted: Array<{ method: string; sessionHeader: string | null }> = [];
  const client = new Client({ name: 'modern-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway.address}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
    fetch: async (url, init) => {
      if (typeof init?.body === 'string') posted.push({ method: (JSON.parse(init.body) as { method: string }).method, sessionHeader: new Headers(init.headers).get('mcp-session-id') });
      return fetch(url, init);
    },
  });
  await client.connect(transport);
  return { client, posted };
}

/** The same reads and act through either client: a query page, the next page by its cursor, an action. */
async function querySequence(callTool: (name: string, args: Record<string, unknown>) => Promise<unknown>) {
  const first = json(await callTool('query', { object: 'finance.transaction', limit: 20 }));
  expect(first.rows).toHaveLength(20);
  expect(first.has_more).toBe(true);
  const second = json(await callTool('query', { object: 'finance.transaction', limit: 20, cursor: first.next_cursor }));
  expect(second.rows).toHaveLength(10);
  expect(second.has_more).toBe(false);
  const action = (await callTool('invoke_action', { name: 'home.light.turn_on', arguments: {} })) as TextResult;
  expect(action).toMatchObject({ isError: true, content: [{ type: 'text', text: "no active connection for sector 'home'" }] });
  return [first, second];
}

/** An audit row without what differs between any two calls (its request id, the producer's sequence number): the rest must match exactly. */
const comparable = ({ requestId: _requestId, seq: _seq, ...row }: Record<string, unknown>) => row;

describe('the 2026-07-28 lane beside the sessions (design 8.1, issue 37)', () => {
  it('serves the official v2 client through discover, tools/list, a query page and its next page, and an action, with no initialize and no session; its audit rows are a session client\'s', async () => {
    const session = await connectAgent(gateway.address, key);
    const sessionPages = await querySequence((name, args) => session.client.callTool({ name, arguments: args }));
    await session.client.close();
    const sessionRows = await collectQueuedAuditRows(testEnv.redis, 3);

    const { client, posted } = await connectModern(key);
    expect(client.getServerVersion()).toEqual({ name: 'pcg-test-gateway', version: expect.any(String) });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['describe_context', 'fetch_live', 'get_record', 'get_schema', 'invoke_action', 'list_actions', 'query']);
    const modernPages = await querySequence((name, args) => client.callTool({ name, arguments: args }));
    await client.close();
    const modernRows = await collectQueuedAuditRows(testEnv.redis, 3);

    expect(posted.map((request) => request.method)).toEqual(['server/discover', 'tools/list', 'tools/call', 'tools/call', 'tools/call']);
    expect(posted.every((request) => request.sessionHeader === null)).toBe(true);
    expect(modernPages.map((page) => page.rows)).toEqual(sessionPages.map((page) => page.rows));
    expect(modernRows.map(comparable)).toEqual(sessionRows.map(comparable));
    expect(modernRows.map((row) => [row.tool, row.agentId, row.decision])).toEqual([
      ['query', 'stateless-agent', 'allow'],
      ['query', 'stateless-agent', 'allow'],
      ['invoke_action', 'stateless-agent', 'allow'],
    ]);
    expect(new Set(modernRows.map((row) => row.requestId)).size).toBe(3);
  });

  it('answers server/discover with both eras\' versions, tools only, the identity and the instructions initialize gives', async () => {
    const discover = await modernCall(gateway.address, key, 'server/discover', {}, 7);
    expect(discover.status).toBe(200);
    const session = await connectAgent(gateway.address, key);
    expect(discover.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: {
        resultType: 'complete',
        supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
        capabilities: { tools: { listChanged: false } },
        instructions: session.client.getInstructions(),
        ttlMs: expect.any(Number),
        cacheScope: 'public',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'pcg-test-gateway', version: session.client.getServerVersion()?.version } },
      },
    });
    await session.client.close();
  });

  it('lists the same tools with the same input schemas as a session, besides the x-mcp-header marks, with resultType and the identity', async () => {
    const session = await connectAgent(gateway.address, key);
    const sessionTools = (await session.client.listTools()).tools;
    await session.client.close();
    const answer = (await modernCall(gateway.address, key, 'tools/list')).json() as { result: { tools: Array<{ name: string; inputSchema: { properties: Record<string, Record<string, unknown>> } }>; resultType: string; _meta: unknown } };
    expect(answer.result.resultType).toBe('complete');
    expect(answer.result._meta).toEqual({ 'io.modelcontextprotocol/serverInfo': { name: 'pcg-test-gateway', version: expect.any(String) } });
    const unmarked = answer.result.tools.map((tool) => ({
      ...tool,
      inputSchema: { ...tool.inputSchema, properties: Object.fromEntries(Object.entries(tool.inputSchema.properties).map(([name, { 'x-mcp-header': _mark, ...schema }]) => [name, schema])) },
    }));
    expect(unmarked).toEqual(sessionTools);
  });

  it('answers a tool call with one text block of JSON indented two spaces, resultType complete and the identity in _meta', async () => {
    const answer = (await modernCall(gateway.address, key, 'tools/call', { name: 'describe_context', arguments: {} })).json() as { result: TextResult & { resultType: string; _meta: unknown } };
    expect(answer.result.resultType).toBe('complete');
    expect(answer.result._meta).toEqual({ 'io.modelcontextprotocol/serverInfo': { name: 'pcg-test-gateway', version: expect.any(String) } });
    expect(answer.result.content).toHaveLength(1);
    const text = answer.result.content[0]?.text ?? '';
    expect(text).toBe(JSON.stringify(JSON.parse(text), null, 2));
    expect(JSON.parse(text)).toMatchObject({ sectors: ['finance', 'home'] });
  });

  it('refuses the very next modern request of a key revoked between two, as a refused initialize is refused, with its row', async () => {
    const revokedKey = await createTestAgent(testEnv.db, { name: 'revoked-between', sectors: ['finance'] });
    const { client } = await connectModern(revokedKey);
    expect((await client.callTool({ name: 'describe_context', arguments: {} })).isError).toBeFalsy();
    await consoleAgents().revoke('revoked-between');
    await expect(client.callTool({ name: 'describe_context', arguments: {} })).rejects.toThrow();
    const raw = await modernCall(gateway.address, revokedKey, 'tools/call', { name: 'describe_context', arguments: {} }, 9);
    expect(raw.status).toBe(401);
    expect(raw.json()).toEqual(rpcError(-32001, 'Unauthorized', 9, 'access denied: revoked'));
    const rows = await collectQueuedAuditRows(testEnv.redis, 3, (row) => row.agentId === 'revoked-between' || row.tool === 'initialize');
    expect(rows.map((row) => [row.tool, row.agentId, row.decision, row.denyReason ?? null])).toEqual([
      ['describe_context', 'revoked-between', 'allow', null],
      ['initialize', null, 'deny', 'access denied: revoked'],
      ['initialize', null, 'deny', 'access denied: revoked'],
    ]);
    await client.close();
  });

  it.each([
    ['no Authorization', () => ({})],
    ['an unknown key', () => ({ authorization: `Bearer pcg_${'x'.repeat(43)}` })],
    ['Bearer with no key', () => ({ authorization: 'Bearer ' })],
    ['a revoked key', async () => {
      const name = `revoked-${randomUUID()}`;
      const revoked = await createTestAgent(testEnv.db, { name, sectors: [] });
      await consoleAgents().revoke(name);
      return { authorization: `Bearer ${revoked}` };
    }],
  ])('refuses a modern request with %s exactly as an initialize with the same credential (status, code, message, data, no challenge while the bridge is off)', async (_label, credential) => {
    const headers = await credential();
    const initialize = await rawMcp(gateway.address, { headers, body: INITIALIZE });
    const modern = await rawMcp(gateway.address, { headers: { ...modernHeaders('server/discover'), ...headers }, body: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } } });
    expect(initialize.status).toBe(401);
    expect(modern.status).toBe(initialize.status);
    expect(modern.json()).toEqual(initialize.json());
    expect(modern.headers.get('www-authenticate')).toBeNull();
  });

  it('opens subscriptions/listen with the acknowledgment first, honoring no notification type, and ends it gracefully', async () => {
    const answer = await modernCall(gateway.address, key, 'subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: true } }, 'sub-1');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = answer.text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    expect(events).toEqual([
      { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' }, notifications: {} } },
      { jsonrpc: '2.0', id: 'sub-1', result: { resultType: 'complete', _meta: expect.objectContaining({ 'io.modelcontextprotocol/subscriptionId': 'sub-1' }) } },
    ]);
  });

  it.each(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'prompts/list', 'no/such-method'])(
    'answers %s on the modern lane with 404 -32601 and the request id (removed or not served, revision 2026-07-28)',
    async (method) => {
      const answer = await modernCall(gateway.address, key, method, {}, 41);
      expect(answer.status).toBe(404);
      expect(answer.json()).toMatchObject({ jsonrpc: '2.0', id: 41, error: { code: -32601 } });
    },
  );

  it('answers an unsupported version with 400 -32022 naming the supported versions and echoing the requested one', async () => {
    const meta = { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
    const answer = await rawMcp(gateway.address, {
      headers: { ...modernHeaders('server/discover'), 'mcp-protocol-version': '2099-01-01', authorization: `Bearer ${key}` },
      body: { jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: meta } },
    });
    expect(answer.status).toBe(400);
    expect(answer.json()).toMatchObject({ id: 3, error: { code: -32022, data: { requested: '2099-01-01', supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] } } });
  });

  it.each([
    ['a method header that disagrees with the body', { 'mcp-method': 'tools/list' }],
    ['no Mcp-Name on a tools/call', { 'mcp-name': undefined }],
    ['an Mcp-Name that disagrees with the body', { 'mcp-name': 'query' }],
    ['no Mcp-Param-Sector while arguments.sector is given', { 'mcp-param-sector': undefined }],
    ['an Mcp-Param-Sector that disagrees with arguments.sector', { 'mcp-param-sector': 'home' }],
    ['an Mcp-Param-Sector whose Base64 is not canonical', { 'mcp-param-sector': '=?base64?ZmluYW5jZQ?=' }],
  ])('refuses %s with 400 -32020 and runs nothing', async (_label, override) => {
    const headers: Record<string, string> = { ...modernHeaders('tools/call', 'get_schema'), 'mcp-param-sector': 'finance', authorization: `Bearer ${key}` };
    for (const [name, value] of Object.entries(override)) {
      if (value === undefined) delete headers[name];
      else headers[name] = value;
    }
    const answer = await rawMcp(gateway.address, { headers, body: { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'get_schema', arguments: { sector: 'finance' }, _meta: MODERN_META } } });
    expect(answer.status).toBe(400);
    expect(answer.json()).toMatchObject({ id: 5, error: { code: -32020 } });
    const accepted = await rawMcp(gateway.address, {
      headers: { ...modernHeaders('tools/call', 'get_schema'), 'mcp-param-sector': '=?base64?ZmluYW5jZQ==?=', authorization: `Bearer ${key}` },
      body: { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'get_schema', arguments: { sector: 'finance' }, _meta: MODERN_META } },
    });
    expect(accepted.status).toBe(200);
    const rows = await collectQueuedAuditRows(testEnv.redis, 1);
    expect(rows.map((row) => row.tool)).toEqual(['get_schema']);
  });

  it('refuses a modern request from a disallowed Origin with the 403 of design 7.3, before the key is looked at', async () => {
    const answer = await rawMcp(gateway.address, {
      headers: { ...modernHeaders('server/discover'), origin: 'https://evil.example', authorization: `Bearer ${key}` },
      body: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } },
    });
    expect(answer.status).toBe(403);
    expect(answer.json()).toEqual(rpcError(-32000, 'Forbidden origin'));
  });

  it.each(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'])('keeps a request whose MCP-Protocol-Version header names the handshake version %s, without the _meta mark, on the session lane (spec 7\'s 400 without a session)', async (version) => {
    const answer = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}`, 'mcp-protocol-version': version }, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual(rpcError(-32000, 'Missing or invalid Mcp-Session-Id', 2));
  });

  it('still answers a request with neither mark, no session header and not initialize as spec 7 says', async () => {
    const answer = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: { jsonrpc: '2.0', id: 2, method: 'server/discover', params: {} } });
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual(rpcError(-32000, 'Missing or invalid Mcp-Session-Id', 2));
  });
});
