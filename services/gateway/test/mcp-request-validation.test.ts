import { InMemoryTransport, specTypeSchemas, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { describeInvalidParams, envelopeParamsIssueOf, invalidParamsOf, refuseInvalidParams } from '../src/mcp/request-validation.ts';

/** JSON-RPC's -32602 and its message, which the field list follows. */
const INVALID_PARAMS = -32602;
const invalid = (detail: string) => `Invalid params: ${detail}`;
const issuesOf = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value);
  if (parsed.success) throw new Error('expected the value to break the schema');
  return parsed.error.issues;
};

afterEach(() => vi.restoreAllMocks());

describe('invalidParamsOf: the params of a served method against its schema', () => {
  it.each([
    ['tools/call', { name: 'query', arguments: { object: 'finance.account' } }],
    ['tools/call', { name: 'query' }],
    ['tools/call', { name: 'query', arguments: {}, _meta: { progressToken: 3 } }],
    ['tools/list', undefined],
    ['tools/list', {}],
    ['tools/list', { cursor: 'next' }],
    ['ping', undefined],
    ['ping', {}],
    ['initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'agent', version: '1.0.0' } }],
  ])('accepts %s with %j', (method, params) => {
    expect(invalidParamsOf({ method, ...(params === undefined ? {} : { params }) })).toBeUndefined();
  });

  it.each([
    ['tools/call', 'arguments an array', { name: 'query', arguments: [true, 1] }, 'params.arguments: expected an object'],
    ['tools/call', 'arguments null', { name: 'query', arguments: null }, 'params.arguments: expected an object'],
    ['tools/call', 'a name that is not a string', { name: 7, arguments: {} }, 'params.name: expected a string'],
    ['tools/call', 'no name', { arguments: {} }, 'params.name: expected a string'],
    ['tools/call', 'a _meta that is not an object', { name: 'query', _meta: 5 }, 'params._meta: expected an object'],
    ['tools/call', 'a task that is not an object', { name: 'query', arguments: {}, task: 5 }, 'params.task: expected an object'],
    ['tools/call', 'params null', null, 'params: expected an object'],
    ['tools/call', 'params an array', [], 'params: expected an object'],
    ['tools/list', 'a cursor that is not a string', { cursor: 5 }, 'params.cursor: expected a string'],
    ['tools/list', 'params an array', [], 'params: expected an object'],
    ['tools/list', 'params null', null, 'params: expected an object'],
    ['ping', 'a _meta that is not an object', { _meta: 1 }, 'params._meta: expected an object'],
    ['ping', 'params a string', 'x', 'params: expected an object'],
    ['initialize', 'a numeric protocol version', { protocolVersion: 1, capabilities: {}, clientInfo: { name: 'a', version: '1' } }, 'params.protocolVersion: expected a string'],
  ])('refuses %s with %s, naming the field', (method, _label, params, detail) => {
    expect(invalidParamsOf({ method, params })).toBe(invalid(detail));
  });

  it('names a progress token that is neither string nor number by the first type it could have been', () => {
    expect(invalidParamsOf({ method: 'ping', params: { _meta: { progressToken: {} } } })).toBe(invalid('params._meta.progressToken: expected a string'));
  });

  it('quotes a key that is not a plain name', () => {
    expect(invalidParamsOf({ method: 'ping', params: { _meta: { 'io.modelcontextprotocol/related-task': 5 } } })).toBe(
      invalid('params._meta."io.modelcontextprotocol/related-task": expected an object'),
    );
  });

  it('names at most three fields and counts the rest', () => {
    expect(invalidParamsOf({ method: 'initialize', params: {} })).toBe(
      invalid('params.protocolVersion: expected a string; params.capabilities: expected an object; params.clientInfo: expected an object'),
    );
    expect(invalidParamsOf({ method: 'initialize', params: { protocolVersion: 1, capabilities: 1, clientInfo: 1, _meta: 1 } })).toBe(
      invalid('params._meta: expected an object; params.protocolVersion: expected a string; params.capabilities: expected an object; and 1 more'),
    );
  });

  it('leaves a method it does not serve to the SDK (-32601), whatever its params', () => {
    expect(invalidParamsOf({ method: 'resources/list', params: 5 })).toBeUndefined();
    expect(invalidParamsOf({ method: 'tools/unknown', params: null })).toBeUndefined();
  });

  it('skips the schema parse for the plain shapes nearly every request has (the SDK parses them once more itself)', () => {
    const { CallToolRequest, ListToolsRequest, PingRequest, InitializeRequest } = specTypeSchemas;
    const parses = [CallToolRequest, ListToolsRequest, PingRequest, InitializeRequest].map((schema) => vi.spyOn(schema['~standard'], 'validate'));
    const plain = [
      { method: 'tools/call', params: { name: 'query', arguments: {} } },
      { method: 'tools/call', params: { name: 'query' } },
      { method: 'tools/call', params: { arguments: {}, name: 'query' } },
      { method: 'tools/list' },
      { method: 'tools/list', params: {} },
      { method: 'ping' },
      { method: 'ping', params: {} },
    ];
    for (const request of plain) expect(invalidParamsOf(request)).toBeUndefined();
    expect(parses.map((parse) => parse.mock.calls.length)).toEqual([0, 0, 0, 0]);
    // Anything else is parsed: a further key, a cursor, or an initialize.
    invalidParamsOf({ method: 'tools/call', params: { name: 'query', arguments: {}, _meta: {} } });
    invalidParamsOf({ method: 'tools/list', params: { cursor: 'c' } });
    invalidParamsOf({ method: 'initialize', params: {} });
    expect(parses.map((parse) => parse.mock.calls.length)).toEqual([1, 1, 0, 1]);
  });
});

describe('describeInvalidParams: a short text naming each field, never zod\'s JSON', () => {
  it.each([
    ['an object', z.object({}), 1],
    ['an object', z.record(z.string(), z.number()), 1],
    ['an array', z.array(z.string()), {}],
    ['a string', z.string(), 1],
    ['a number', z.number(), 'x'],
    ['an integer', z.int(), 1.5],
    ['a boolean', z.boolean(), 1],
  ])('names the expected type in words: %s', (words, field, value) => {
    expect(describeInvalidParams(issuesOf(z.object({ field }), { field: value }))).toBe(invalid(`field: expected ${words}`));
  });

  it('names a type it has no words for as zod does', () => {
    expect(describeInvalidParams(issuesOf(z.object({ big: z.bigint() }), { big: 1 }))).toBe(invalid('big: expected bigint'));
  });

  it("gives zod's own message for an issue other than a type", () => {
    expect(describeInvalidParams(issuesOf(z.object({ name: z.string().min(3) }), { name: 'a' }))).toBe(invalid('name: Too small: expected string to have >=3 characters'));
  });

  it('names a union by its first alternative, inner path included', () => {
    const schema = z.object({ target: z.union([z.object({ id: z.string() }), z.number()]) });
    expect(describeInvalidParams(issuesOf(schema, { target: { id: 5 } }))).toBe(invalid('target.id: expected a string'));
  });

  it('gives the message of a union with no alternative to name', () => {
    const schema = z.object({ shape: z.discriminatedUnion('kind', [z.object({ kind: z.literal('a') }), z.object({ kind: z.literal('b') })]) });
    expect(describeInvalidParams(issuesOf(schema, { shape: { kind: 'c' } }))).toBe(invalid("shape.kind: Invalid discriminator value. Expected 'a' | 'b'"));
  });

  it('writes indices in brackets, plain names dotted, other keys quoted and cut to 40 characters', () => {
    const long = `k-${'x'.repeat(60)}`;
    const schema = z.object({ list: z.array(z.object({ $v_1: z.record(z.string(), z.string()) })) });
    expect(describeInvalidParams(issuesOf(schema, { list: [{ $v_1: {} }, { $v_1: { [long]: 1 } }] }))).toBe(
      invalid(`list[1].$v_1.${JSON.stringify(long.slice(0, 40))}: expected a string`),
    );
    expect(describeInvalidParams(issuesOf(z.record(z.string(), z.string()), { '1st': 1, 'a b': 2 }))).toBe(invalid('"1st": expected a string; "a b": expected a string'));
    expect(describeInvalidParams(issuesOf(z.array(z.string()), [1]))).toBe(invalid('[0]: expected a string'));
  });

  it('calls an issue with no path the request', () => {
    expect(describeInvalidParams(issuesOf(z.object({}), 5))).toBe(invalid('request: expected an object'));
  });
});

describe('envelopeParamsIssueOf: params that break MCP\'s base schema for every method', () => {
  it.each([
    ['params a string', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: 'query' }, 'params: expected an object'],
    ['params an array', { jsonrpc: '2.0', id: 8, method: 'ping', params: [1] }, 'params: expected an object'],
    ['params null', { jsonrpc: '2.0', id: 8, method: 'ping', params: null }, 'params: expected an object'],
    ['a _meta that is not an object', { jsonrpc: '2.0', id: 7, method: 'ping', params: { _meta: 'x' } }, 'params._meta: expected an object'],
    ['a notification whose params are a number', { jsonrpc: '2.0', method: 'notifications/initialized', params: 3 }, 'params: expected an object'],
  ])('names %s', (_label, body, detail) => {
    expect(envelopeParamsIssueOf(body)).toBe(invalid(detail));
  });

  it.each([
    ['no params', { jsonrpc: '2.0', id: 1, method: 'ping' }],
    ['params an object', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'query', arguments: [1] } }],
    ['an object _meta', { jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: { progressToken: 'p' } } }],
    ['a response, which has no method', { jsonrpc: '2.0', id: 1, result: {}, params: 'x' }],
    ['a value that is not a message', 5],
    ['null', null],
    ['an empty batch', []],
  ])('finds nothing wrong with %s', (_label, body) => {
    expect(envelopeParamsIssueOf(body)).toBeUndefined();
  });

  it('names the message of a batch by its place, past anything that is not a message', () => {
    expect(envelopeParamsIssueOf([{ jsonrpc: '2.0', id: 9, method: 'ping' }, { jsonrpc: '2.0', id: 10, method: 'tools/list', params: null }])).toBe(
      invalid('[1].params: expected an object'),
    );
    expect(envelopeParamsIssueOf([null, 7, 'x', { jsonrpc: '2.0', method: 'notifications/cancelled', params: { _meta: [] } }])).toBe(invalid('[3].params._meta: expected an object'));
  });

  it('passes the usual params, an object without _meta, without a parse', () => {
    const parse = vi.spyOn(specTypeSchemas.Request['~standard'], 'validate');
    expect(envelopeParamsIssueOf([{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'query' } }, { jsonrpc: '2.0', id: 2, method: 'ping' }])).toBeUndefined();
    expect(parse).not.toHaveBeenCalled();
    expect(envelopeParamsIssueOf({ jsonrpc: '2.0', id: 3, method: 'ping', params: { _meta: {} } })).toBeUndefined();
    expect(parse).toHaveBeenCalledTimes(1);
  });
});

describe('refuseInvalidParams: a mismatched request answered before the SDK sees it', () => {
  /** A transport pair: what the SDK side was handed, and what the client side received. */
  async function linked(options: { deliverTo?: boolean } = {}) {
    const [client, server] = InMemoryTransport.createLinkedPair();
    const delivered: JSONRPCMessage[] = [];
    const answers: JSONRPCMessage[] = [];
    if (options.deliverTo !== false) server.onmessage = (message) => void delivered.push(message);
    client.onmessage = (message) => void answers.push(message);
    const { log, lines } = createCapturingLogger('gateway');
    refuseInvalidParams(server, log);
    await Promise.all([client.start(), server.start()]);
    return { client, server, delivered, answers, lines };
  }

  it('answers a request with invalid params -32602 naming the field, and never hands it on', async () => {
    const { client, delivered, answers } = await linked();
    await client.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'query', arguments: [1] } });
    await vi.waitFor(() => expect(answers).toHaveLength(1));
    expect(answers).toEqual([{ jsonrpc: '2.0', id: 4, error: { code: INVALID_PARAMS, message: invalid('params.arguments: expected an object') } }]);
    expect(delivered).toEqual([]);
  });

  it('hands on valid requests, notifications and responses untouched, and answers nothing itself', async () => {
    const { client, delivered, answers } = await linked();
    const messages: JSONRPCMessage[] = [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'query', arguments: {} } },
      { jsonrpc: '2.0', id: 2, method: 'resources/list', params: { cursor: 5 } },
      { jsonrpc: '2.0', method: 'tools/list', params: { cursor: 5 } },
      { jsonrpc: '2.0', id: 3, result: {} },
    ];
    for (const message of messages) await client.send(message);
    expect(delivered).toEqual(messages);
    expect(answers).toEqual([]);
  });

  it('copes with a transport that had no handler yet', async () => {
    const { client, answers } = await linked({ deliverTo: false });
    await client.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await client.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: 5 } });
    await vi.waitFor(() => expect(answers).toHaveLength(1));
    expect(answers).toEqual([{ jsonrpc: '2.0', id: 2, error: { code: INVALID_PARAMS, message: invalid('params.cursor: expected a string') } }]);
  });

  it('logs an answer it could not send', async () => {
    const { server, lines } = await linked();
    const deliver = server.onmessage;
    await server.close();
    deliver?.({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: { cursor: 1 } });
    await vi.waitFor(() => expect(lines().some((line) => line.includes('could not answer a request with invalid params'))).toBe(true));
    const logged = lines().map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message?: string } });
    expect(logged).toEqual([expect.objectContaining({ level: 40, msg: 'could not answer a request with invalid params', err: expect.objectContaining({ message: 'Not connected' }) })]);
  });
});
