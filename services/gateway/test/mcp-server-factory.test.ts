import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { createMcpServer } from '../src/mcp/mcp-server-factory.ts';

const grant = { agentId: 1, agentName: 'factory-agent', sectors: [], expiresAt: null, generation: 1 };

/** The server as the stdio session holds it (no HTTP router in front): one raw request in, its answer out. */
async function answerTo(request: Record<string, unknown>): Promise<JSONRPCMessage> {
  const { log } = createCapturingLogger('gateway');
  const server = createMcpServer({ serviceName: 'factory-test', tools: [], listing: [], log }, grant);
  const [client, served] = InMemoryTransport.createLinkedPair();
  await server.connect(served);
  const answered = new Promise<JSONRPCMessage>((resolve) => (client.onmessage = resolve));
  await client.start();
  await client.send({ jsonrpc: '2.0', id: 1, ...request } as JSONRPCMessage);
  const answer = await answered;
  await server.close();
  return answer;
}

describe('the session server without its HTTP router (the stdio session; issue 38: tools/call through the public fallback handler)', () => {
  it('answers a tools/call whose name is not a string with -32602 naming the field', async () => {
    expect(await answerTo({ method: 'tools/call', params: { name: 42, arguments: {} } })).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: 'Invalid params: params.name: expected a string' },
    });
  });

  it('answers a method it does not serve with -32601 Method not found, as the SDK does', async () => {
    expect(await answerTo({ method: 'resources/list', params: {} })).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } });
  });
});
