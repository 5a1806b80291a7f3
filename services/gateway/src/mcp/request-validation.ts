import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListToolsRequestSchema,
  NotificationSchema,
  PingRequestSchema,
  RequestSchema,
  type JSONRPCErrorResponse,
  type JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { Logger } from '@pcg/shared/logger';
import { JSONRPC_ERRORS } from './jsonrpc-errors.ts';

/**
 * Every request method a session answers, with the SDK's schema for it: initialize and ping are the SDK
 * Server's own, tools/list and tools/call ours (mcp-server-factory.ts). Any other method is the SDK's
 * -32601 `Method not found`, whatever its params.
 */
const SERVED_REQUESTS = new Map<string, z.ZodType>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['tools/call', CallToolRequestSchema],
]);

const MAX_ISSUES = 3;
const MAX_KEY_CHARS = 40;

const TYPE_NOUNS: Record<string, string> = {
  object: 'an object',
  record: 'an object',
  array: 'an array',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
};

function pathText(path: readonly PropertyKey[]): string {
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else {
      const name = String(key);
      const shown = /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name.slice(0, MAX_KEY_CHARS));
      text += text === '' ? shown : `.${shown}`;
    }
  }
  return text === '' ? 'request' : text;
}

function issueText(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') return `expected ${TYPE_NOUNS[issue.expected] ?? issue.expected}`;
  if (issue.code === 'invalid_union' && issue.errors[0]?.[0]) return issueText(issue.errors[0][0]);
  return issue.message;
}

/**
 * A short, readable description of why a request does not match its method's schema, naming each
 * field (`params.arguments: expected an object`); zod's own JSON dump is never shown to a client.
 */
export function describeInvalidParams(issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.slice(0, MAX_ISSUES).map((issue) => {
    // A union's inner issue carries its own path below the union's.
    const inner = issue.code === 'invalid_union' ? issue.errors[0]?.[0] : undefined;
    return `${pathText(inner ? [...issue.path, ...inner.path] : issue.path)}: ${issueText(issue)}`;
  });
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : '';
  return `${JSONRPC_ERRORS.invalidParams.message}: ${parts.join('; ')}${more}`;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The shapes nearly every request has, which its schema accepts for certain: a tools/call with only a
 * string `name` and an object `arguments`, or tools/list and ping with no params or empty ones. They skip
 * the zod parse (the SDK parses them once more itself); anything else is parsed.
 */
function plainlyValid(request: { method: string; params?: unknown }): boolean {
  const params = request.params;
  if (request.method === 'tools/call') {
    if (!isPlainObject(params) || typeof params.name !== 'string') return false;
    for (const key in params) if (key !== 'name' && key !== 'arguments') return false;
    return params.arguments === undefined || isPlainObject(params.arguments);
  }
  if (request.method === 'tools/list' || request.method === 'ping') {
    if (params === undefined) return true;
    if (!isPlainObject(params)) return false;
    for (const _key in params) return false;
    return true;
  }
  return false;
}

/** The -32602 message for a request of a served method whose params do not match; undefined when they do. */
export function invalidParamsOf(request: { method: string; params?: unknown }): string | undefined {
  const schema = SERVED_REQUESTS.get(request.method);
  if (!schema || plainlyValid(request)) return undefined;
  const parsed = schema.safeParse(request);
  return parsed.success ? undefined : describeInvalidParams(parsed.error.issues);
}

const ENVELOPE_PARAMS = { request: RequestSchema.shape.params, notification: NotificationSchema.shape.params };

/**
 * The -32602 message for a POST holding a request or notification whose `params` breaks MCP's base
 * schema for every method (an object, with an object `_meta`); undefined when there is none. The session
 * transport refuses such a message for the whole POST as a -32700 parse error, so the router answers
 * it first, naming the message of a batch by its place.
 */
export function envelopeParamsIssueOf(body: unknown): string | undefined {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  for (const [index, message] of messages.entries()) {
    if (typeof message !== 'object' || message === null || !('method' in message) || !('params' in message)) continue;
    // The usual case, params an object without `_meta`, passes the base schema without a parse.
    if (isPlainObject(message.params) && !('_meta' in message.params)) continue;
    const parsed = ENVELOPE_PARAMS['id' in message ? 'request' : 'notification'].safeParse(message.params);
    if (parsed.success) continue;
    const prefix: PropertyKey[] = Array.isArray(body) ? [index, 'params'] : ['params'];
    return describeInvalidParams(parsed.error.issues.map((issue) => ({ ...issue, path: [...prefix, ...issue.path] })));
  }
  return undefined;
}

/**
 * Answers, on the transport, every request whose params do not match its method's schema, before the
 * SDK sees it: the SDK's Protocol parses a request outside every handler and would answer a mismatch
 * -32603 `Internal error` with zod's issue list as the message. Call after `server.connect(transport)`.
 */
export function refuseInvalidParams(transport: Transport, log: Logger): void {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    // The transport has parsed every message as JSON-RPC already; a request is one with a method and an id.
    const request = 'method' in message && 'id' in message ? (message as JSONRPCRequest) : undefined;
    const invalid = request ? invalidParamsOf(request) : undefined;
    if (invalid === undefined || !request) {
      deliver?.(message, extra);
      return;
    }
    const answer: JSONRPCErrorResponse = { jsonrpc: '2.0', id: request.id, error: { code: JSONRPC_ERRORS.invalidParams.code, message: invalid } };
    transport.send(answer).catch((error: unknown) => log.warn({ err: error }, 'could not answer a request with invalid params'));
  };
}
