import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectQueuedAuditRows, createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import { unknownToolError } from '../src/mcp/jsonrpc-errors.ts';
import type { RunningGateway } from '../src/service.ts';
import { connectAgent, messageOf, rawInitialize, rawMcp, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
const SEVEN_TOOLS = ['describe_context', 'get_schema', 'query', 'get_record', 'fetch_live', 'list_actions', 'invoke_action'];
let gateway: RunningGateway;
let key: string;
let sessionId: string;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  key = await createTestAgent(testEnv.db, { name: 'unknown-tool', sectors: ['finance'] });
  sessionId = await rawInitialize(gateway.address, key);
});
afterAll(async () => gateway.close());

const call = (id: number, name: unknown, args: unknown) =>
  rawMcp(gateway.address, {
    headers: { 'mcp-session-id': sessionId, authorization: `Bearer ${key}` },
    body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
  });

describe('tools/call naming no tool of the gateway (MCP: -32602, not a tool result)', () => {
  it('answers a JSON-RPC error -32602 naming the seven tools, with no audit row; a known tool with bad arguments stays a tool error with its row', async () => {
    const unknown = await call(1, 'drop_tables', {});
    expect(unknown.status).toBe(200);
    const message = messageOf(unknown.text) as { id: number; result?: unknown; error?: { code: number; message: string; data: { tools: string[] } } };
    expect(message.result).toBeUndefined();
    expect(message.error).toEqual(unknownToolError('drop_tables', SEVEN_TOOLS));
    expect(message.error?.code).toBe(-32602);
    for (const tool of SEVEN_TOOLS) expect(message.error?.message).toContain(tool);
    expect(message.error?.data.tools).toEqual(SEVEN_TOOLS);

    // Spec 6: a known tool with invalid arguments is still a tool call, answered as a tool error and recorded.
    const badArgs = await call(2, 'query', { object: 42 });
    const result = messageOf(badArgs.text) as { result?: { isError?: boolean } };
    expect(result.result?.isError).toBe(true);
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.agentId === 'unknown-tool');
    expect(rows.map((row) => row.tool)).toEqual(['query']);
    expect(rows[0]).toMatchObject({ outcome: 'error' });
  });

  it('cuts a very long unknown name in the message, and the SDK client sees an McpError (a CLI exits non-zero)', async () => {
    const long = 'x'.repeat(5000);
    const message = messageOf((await call(3, long, {})).text) as { error: { message: string } };
    expect(message.error.message.length).toBeLessThan(400);
    const { client } = await connectAgent(gateway.address, key);
    try {
      const failure = await client.callTool({ name: 'no_such_tool', arguments: {} }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(McpError);
      expect((failure as McpError).code).toBe(-32602);
    } finally {
      await client.close();
    }
  });
});
