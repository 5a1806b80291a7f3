import { ClientRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import type { RunningGateway } from '../src/service.ts';
import { INITIALIZE, messageOf, rawInitialize, rawMcp, rpcError, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let key: string;
let sessionId: string;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  key = await createTestAgent(testEnv.db, { name: 'malformed', sectors: ['home'] });
  sessionId = await rawInitialize(gateway.address, key);
});
afterAll(async () => gateway.close());

const onSession = () => ({ 'mcp-session-id': sessionId, authorization: `Bearer ${key}` });

/**
 * The JSON-RPC error a session answered a request with: in its stream (200), or as the POST's answer
 * (400) when the router refused it before the transport.
 */
async function errorOf(body: Record<string, unknown>, status = 200): Promise<{ id: unknown; code: number; message: string }> {
  const answer = await rawMcp(gateway.address, { headers: onSession(), body });
  expect(answer.status).toBe(status);
  const message = messageOf(answer.text) as { id: unknown; error?: { code: number; message: string } };
  if (!message.error) throw new Error(`expected an error, got ${answer.text}`);
  return { id: message.id, ...message.error };
}

const invalid = (detail: string) => `Invalid params: ${detail}`;

describe('a request whose params do not match its method (not -32603 with zod issue JSON)', () => {
  it.each([
    ['arguments an array', { name: 'query', arguments: [true, 1] }, 'params.arguments: expected an object'],
    ['arguments a number', { name: 'query', arguments: 944810732 }, 'params.arguments: expected an object'],
    ['name not a string', { name: 7, arguments: {} }, 'params.name: expected a string'],
    ['no name', { arguments: {} }, 'params.name: expected a string'],
  ])('tools/call with %s → -32602 naming the field', async (_case, params, detail) => {
    const error = await errorOf({ jsonrpc: '2.0', id: 4, method: 'tools/call', params });
    expect(error).toEqual({ id: 4, code: -32602, message: invalid(detail) });
  });

  it('tools/list with a bad cursor → -32602 in the stream', async () => {
    expect(await errorOf({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: { cursor: 5 } })).toEqual({ id: 6, code: -32602, message: invalid('params.cursor: expected a string') });
  });

  it('params that are not an object → 400 -32602 for the POST (the session transport would call it a parse error), a batch naming the message', async () => {
    expect(await errorOf({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: 'query' }, 400)).toEqual({ id: 5, code: -32602, message: invalid('params: expected an object') });
    expect(await errorOf({ jsonrpc: '2.0', id: 8, method: 'ping', params: [1] }, 400)).toEqual({ id: 8, code: -32602, message: invalid('params: expected an object') });
    expect(await errorOf({ jsonrpc: '2.0', id: 7, method: 'ping', params: { _meta: 'x' } }, 400)).toEqual({ id: 7, code: -32602, message: invalid('params._meta: expected an object') });
    const batch = await rawMcp(gateway.address, { headers: onSession(), body: [{ jsonrpc: '2.0', id: 9, method: 'ping' }, { jsonrpc: '2.0', id: 10, method: 'tools/list', params: null }] });
    expect(batch.status).toBe(400);
    expect(batch.json()).toEqual(rpcError(-32602, invalid('[1].params: expected an object')));
  });

  it('answers every client request method with hostile params by a result, -32601 or -32602, never -32603, and the session goes on', async () => {
    const methods = ClientRequestSchema.options.map((schema) => schema.shape.method.value);
    const refusedByTheRouter: unknown[] = [7, [], null, { _meta: [] }];
    let id = 100;
    for (const method of methods.filter((name) => name !== 'initialize')) {
      for (const params of [...refusedByTheRouter, { name: 5, arguments: [], cursor: {}, uri: 1, taskId: 1, level: 1, ref: 1 }]) {
        const answer = await rawMcp(gateway.address, { headers: onSession(), body: { jsonrpc: '2.0', id: ++id, method, params } });
        const what = `${method} ${JSON.stringify(params)}: ${answer.status} ${answer.text}`;
        expect(answer.status, what).toBe(refusedByTheRouter.includes(params) ? 400 : 200);
        const message = messageOf(answer.text) as { result?: unknown; error?: { code: number; message: string } };
        if (message.result !== undefined && method === 'ping') continue;
        expect([-32601, -32602], what).toContain(message.error?.code);
        expect(message.error?.message, what).not.toMatch(/[[{]\s*"|\n/);
      }
    }
    const listed = messageOf((await rawMcp(gateway.address, { headers: onSession(), body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })).text);
    expect(listed).toHaveProperty('result.tools');
  });

  it('answers an initialize with bad params 400 -32602 once the key stands; without a key it is still 401', async () => {
    const body = { ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: 2025 } };
    const keyed = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body });
    expect(keyed.status).toBe(400);
    expect(keyed.headers.get('mcp-session-id')).toBeNull();
    expect(keyed.json()).toEqual(rpcError(-32602, invalid('params.protocolVersion: expected a string'), 1));
    const onLive = await rawMcp(gateway.address, { headers: onSession(), body });
    expect(onLive.status).toBe(400);
    expect((onLive.json() as { error: { code: number } }).error.code).toBe(-32602);
    const keyless = await rawMcp(gateway.address, { body });
    expect(keyless.status).toBe(401);
    expect((keyless.json() as { error: { code: number } }).error.code).toBe(-32001);
  });
});
