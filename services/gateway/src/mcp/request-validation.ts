import { specTypeSchemas, type JSONRPCErrorResponse, type JSONRPCRequest, type StandardSchemaV1, type Transport } from '@modelcontextprotocol/server';
import type { Logger } from '@pcg/shared/logger';
import { JSONRPC_ERRORS } from './jsonrpc-errors.ts';
import { isPlainObject } from './plain-object.ts';

/**
 * Every request method a session answers, with the SDK's schema for it (its Standard Schema validators):
 * initialize and ping are the SDK Server's own, tools/list and tools/call ours (mcp-server-factory.ts).
 * Any other method is the SDK's -32601 `Method not found`, whatever its params.
 */
const SERVED_REQUESTS = new Map<string, StandardSchemaV1>([
  ['initialize', specTypeSchemas.InitializeRequest],
  ['ping', specTypeSchemas.PingRequest],
  ['tools/list', specTypeSchemas.ListToolsRequest],
  ['tools/call', specTypeSchemas.CallToolRequest],
]);

/**
 * An issue as a Standard Schema validator reports it. The SDK's validators are zod's, whose issues also say
 * what kind of mismatch it was (`code`, `expected`, a union's `errors`); those are used when present.
 */
type SchemaIssue = StandardSchemaV1.Issue & { code?: string; expected?: string; errors?: readonly (readonly SchemaIssue[])[] };

/** The issues of `value` against `schema`; undefined when it matches. The SDK's validators are synchronous. */
function issuesOf(schema: StandardSchemaV1, value: unknown): readonly SchemaIssue[] | undefined {
  const result = schema['~standard'].validate(value) as StandardSchemaV1.Result<unknown>;
  return result.issues as readonly SchemaIssue[] | undefined;
}

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

type PathSegment = PropertyKey | StandardSchemaV1.PathSegment;

function pathText(path: readonly PathSegment[]): string {
  let text = '';
  for (const segment of path) {
    const key = typeof segment === 'object' ? segment.key : segment;
    if (typeof key === 'number') text += `[${key}]`;
    else {
      const name = String(key);
      const shown = /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name.slice(0, MAX_KEY_CHARS));
      text += text === '' ? shown : `.${shown}`;
    }
  }
  return text === '' ? 'request' : text;
}

function issueText(issue: SchemaIssue): string {
  if (issue.code === 'invalid_type' && issue.expected !== undefined) return `expected ${TYPE_NOUNS[issue.expected] ?? issue.expected}`;
  const inner = issue.code === 'invalid_union' ? issue.errors?.[0]?.[0] : undefined;
  return inner ? issueText(inner) : issue.message;
}

/**
 * A short, readable description of why a request does not match its method's schema, naming each
 * field (`params.arguments: expected an object`); zod's own JSON dump is never shown to a client.
 */
export function describeInvalidParams(issues: readonly SchemaIssue[]): string {
  const parts = issues.slice(0, MAX_ISSUES).map((issue) => {
    // A union's inner issue carries its own path below the union's.
    const inner = issue.code === 'invalid_union' ? issue.errors?.[0]?.[0] : undefined;
    const path = issue.path ?? [];
    return `${pathText(inner ? [...path, ...(inner.path ?? [])] : path)}: ${issueText(issue)}`;
  });
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : '';
  return `${JSONRPC_ERRORS.invalidParams.message}: ${parts.join('; ')}${more}`;
}


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
  const issues = issuesOf(schema, request);
  return issues === undefined ? undefined : describeInvalidParams(issues);
}

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
    // Only the params are checked here: a method name of any kind is the method's own answer.
    const base = 'id' in message ? specTypeSchemas.Request : specTypeSchemas.Notification;
    const issues = issuesOf(base, { method: 'envelope', params: message.params });
    if (issues === undefined) continue;
    const prefix: PropertyKey[] = Array.isArray(body) ? [index] : [];
    return describeInvalidParams(issues.map((issue) => ({ ...issue, path: [...prefix, ...(issue.path ?? [])] })));
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
