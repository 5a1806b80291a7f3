import fc from 'fast-check';
import { SECTORS } from '@pcg/shared/sectors';
import type { FuzzStack } from '../fuzz-stack.ts';
import { jsonRpcOf, type FuzzAnswer, type FuzzRequest } from '../http-exchange.ts';
import { brokenJsonText, hostileJson, hostileNumber, hostileText, plausible } from '../hostile-values.ts';
import { authorization, withHeader, type Surface } from './surface.ts';

const TOOLS = ['describe_context', 'get_schema', 'query', 'get_record', 'fetch_live', 'list_actions', 'invoke_action'] as const;
const OBJECTS = ['finance.account', 'finance.transaction', 'finance.holding', 'health.sample', 'health.workout', 'health.sleep_session', 'mail.message', 'contacts.contact', 'calendar.event', 'home.entity'] as const;
const FIELDS = ['id', 'amount', 'posted_on', 'synced_at', 'start_at', 'state', 'metric', 'value', 'currency', 'entity_id', 'description'] as const;
const OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'contains', 'starts_with', 'is_null', 'between', 'overlaps'] as const;
const RELATIVE = ['today', 'yesterday', 'tomorrow', 'this_week', 'last_week', 'this_month', 'last_month', 'this_year', 'last_30_days', 'last_0_days', 'next_99999_days', 'last__days'] as const;
const OUTPUTS = ['count', 'sum_amount', 'avg_value', 'start_at_week', 'posted_on_month', 'category'] as const;
const METHODS = ['initialize', 'tools/list', 'tools/call', 'ping', 'resources/list', 'prompts/list', 'notifications/initialized', 'server/discover', 'logging/setLevel', 'completion/complete'] as const;

/** Origins the agent port allows (loopback; the stack's public origin is loopback too) and ones it refuses (design 7.3). */
const ALLOWED_ORIGINS = ['http://localhost:5173', 'http://127.0.0.1', 'https://[::1]:8443'] as const;
const REFUSED_ORIGINS = ['https://evil.example.com', 'null', 'http://127.0.0.1.evil.example.com', 'http://localhost:5173/', 'chrome-extension://abc'] as const;
/** Host values it refuses on /mcp; an absent one is set by node:http to the loopback address it dials. */
const REFUSED_HOSTS = ['evil.example.com', 'EVIL.example.com:8788', '127.0.0.1.nip.io'] as const;

const condition = fc.record({ field: plausible(FIELDS), op: plausible(OPS), value: fc.oneof(hostileJson, fc.array(hostileText, { maxLength: 3 }), plausible(RELATIVE)) }, { requiredKeys: [] });

const where = fc.oneof({ weight: 4, arbitrary: fc.array(condition, { minLength: 1, maxLength: 3 }) }, { weight: 1, arbitrary: hostileJson });
const orderBy = fc.oneof({ weight: 4, arbitrary: fc.array(fc.record({ field: fc.oneof(plausible(FIELDS), plausible(OUTPUTS)), direction: plausible(['asc', 'desc']) }), { maxLength: 2 }) }, { weight: 1, arbitrary: hostileJson });
const groupBy = fc.oneof(plausible(FIELDS), fc.record({ field: plausible(FIELDS), bucket: plausible(['day', 'week', 'month', 'year']) }, { requiredKeys: [] }));
const aggregate = fc.oneof(
  fc.record({ group_by: fc.array(groupBy, { maxLength: 2 }), metrics: fc.array(fc.record({ fn: plausible(['count', 'sum', 'avg', 'min', 'max']), field: plausible(FIELDS) }, { requiredKeys: ['fn'] }), { minLength: 1, maxLength: 2 }) }, { requiredKeys: ['metrics'] }),
  hostileJson,
);
const some = { requiredKeys: [] as [] };
const connectionId = plausible(['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '']);

/** Each tool's own argument shape, with hostile values where its checks must hold; sometimes anything at all. */
const toolCalls: Record<(typeof TOOLS)[number], fc.Arbitrary<unknown>> = {
  describe_context: fc.constant({}),
  get_schema: fc.record({ sector: plausible(SECTORS) }, some),
  query: fc.record({ object: plausible(OBJECTS, 6), where, order_by: orderBy, select: fc.array(plausible(FIELDS), { maxLength: 3 }), limit: fc.oneof(fc.integer({ min: 1, max: 200 }), hostileNumber), cursor: hostileText, aggregate }, { requiredKeys: ['object'] }),
  get_record: fc.record({ object: plausible(OBJECTS, 6), id: fc.oneof(hostileText, hostileNumber) }, { requiredKeys: ['object', 'id'] }),
  fetch_live: fc.record({ object: plausible(OBJECTS, 6), id: hostileText, where, connection_id: connectionId }, { requiredKeys: ['object'] }),
  list_actions: fc.record({ sector: plausible(SECTORS) }, some),
  invoke_action: fc.record(
    { name: plausible(['home.light.turn_on', 'home.switch.toggle', 'finance.x.y', 'home.', 'home']), arguments: fc.oneof(hostileJson, fc.record({ entity_id: fc.oneof(plausible(['light.kitchen', 'light.nowhere', '']), fc.array(hostileText, { maxLength: 3 })) })), connection_id: connectionId },
    { requiredKeys: ['name'] },
  ),
};

const namedToolCall = fc.constantFrom(...TOOLS).chain((name) => toolCalls[name].map((args) => ({ name, arguments: args })));

const toolCall = fc.record({
  jsonrpc: fc.constant('2.0'),
  id: fc.oneof(fc.integer(), hostileText),
  method: fc.constant('tools/call'),
  params: fc.oneof({ weight: 5, arbitrary: namedToolCall }, { weight: 1, arbitrary: fc.record({ name: plausible(TOOLS), arguments: hostileJson }, some) }),
});

const jsonRpcMessage = fc.oneof(
  toolCall,
  fc.record({ jsonrpc: plausible(['2.0']), id: fc.oneof(fc.integer(), hostileText, fc.constant(null), hostileJson), method: plausible(METHODS), params: hostileJson }, some),
  hostileJson,
);

const transportChaos = (stack: FuzzStack) =>
  fc.record({
    method: fc.constantFrom('POST', 'POST', 'GET', 'DELETE', 'PUT', 'OPTIONS'),
    path: fc.constantFrom('/mcp', '/mcp', '/mcp/', '/MCP', '/mcp?x=1', '/mcp/../mcp', '/nothing', '//mcp'),
    session: fc.oneof(
      { weight: 3, arbitrary: fc.constant(stack.sessionId) },
      { weight: 2, arbitrary: fc.constantFrom(undefined, '', 'not-a-session', '00000000-0000-4000-8000-000000000000', `${stack.sessionId} `) },
      { weight: 1, arbitrary: hostileText.map((text) => text.replace(/[^\x20-\x7e]/g, '').slice(0, 200)) },
    ),
    authorization: authorization(stack.agentKey),
    accept: fc.constantFrom('application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*', undefined),
    contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', undefined),
    body: fc.oneof({ weight: 3, arbitrary: jsonRpcMessage }, { weight: 1, arbitrary: fc.array(jsonRpcMessage, { maxLength: 4 }) }, { weight: 1, arbitrary: brokenJsonText }),
    origin: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...ALLOWED_ORIGINS) }, { weight: 1, arbitrary: fc.constantFrom(...REFUSED_ORIGINS) }),
    host: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('localhost', ...REFUSED_HOSTS) }),
  });

/** A well-formed request on the open session, so that the hostile part is the message and the tool arguments. */
const onTheSession = (stack: FuzzStack) =>
  fc.oneof({ weight: 4, arbitrary: toolCall }, { weight: 1, arbitrary: jsonRpcMessage }).map((body) => ({
    method: 'POST',
    path: '/mcp',
    session: stack.sessionId as string | undefined,
    authorization: `Bearer ${stack.agentKey}` as string | undefined,
    accept: 'application/json, text/event-stream' as string | undefined,
    contentType: 'application/json' as string | undefined,
    body: body as unknown,
    origin: undefined as string | undefined,
    host: undefined as string | undefined,
  }));

const headerOf = (request: FuzzRequest, name: string) => Object.entries(request.headers).find(([key]) => key.toLowerCase() === name)?.[1];

/** Design 7.3 on /mcp: a refused Host, then a present and refused Origin, is 403; CORS only for an allowed origin. */
function originProblems(request: FuzzRequest, answer: FuzzAnswer, pathname: string): string[] {
  const problems: string[] = [];
  const origin = headerOf(request, 'origin');
  const host = headerOf(request, 'host');
  const allowOrigin = answer.headers['access-control-allow-origin'];
  const originAllowed = origin !== undefined && (ALLOWED_ORIGINS as readonly string[]).includes(origin);
  if (allowOrigin !== undefined && (!originAllowed || allowOrigin !== origin)) problems.push(`design 7.3: CORS headers for origin ${String(origin)}`);
  // Another method on /mcp (PUT) is no route, and answers like any unknown path.
  if (pathname !== '/mcp' || !['GET', 'POST', 'DELETE', 'OPTIONS'].includes(request.method)) return problems;
  const error = (jsonRpcOf(answer) as { error?: { message?: string } } | undefined)?.error?.message;
  if (host !== undefined && (REFUSED_HOSTS as readonly string[]).includes(host)) {
    if (answer.status !== 403 || error !== 'Forbidden host') problems.push('design 7.3: a refused Host on /mcp is 403 Forbidden host');
    return problems;
  }
  if (origin !== undefined && !originAllowed) {
    if (answer.status !== 403 || error !== 'Forbidden origin') problems.push('MCP transport: a present, refused Origin on /mcp is 403 Forbidden origin');
    return problems;
  }
  if (request.method === 'OPTIONS') {
    if (originAllowed && (answer.status !== 204 || allowOrigin !== origin)) problems.push('design 7.3: a preflight from an allowed origin is 204 with CORS headers');
    if (origin === undefined && answer.status !== 404) problems.push('spec 4.1: OPTIONS /mcp without an Origin keeps 404 -32601');
  }
  return problems;
}

export const mcpSurface: Surface = {
  name: 'mcp',
  requests(stack: FuzzStack) {
    return fc
      .oneof({ weight: 3, arbitrary: onTheSession(stack) }, { weight: 1, arbitrary: transportChaos(stack) })
      .map(({ method, path, session: id, authorization: sent, accept, contentType, body: payload, origin, host }): FuzzRequest => {
        // A GET on the open session is an SSE stream that stays open by design; DELETE would end the session the other cases use.
        // HTTP drops a header's surrounding spaces and session ids are read case-blind, so `<id> ` names the open session too.
        const namesOpenSession = id !== undefined && id.trim().toLowerCase() === stack.sessionId.toLowerCase();
        const sessionHeader = (method === 'GET' || method === 'DELETE') && namesOpenSession ? 'not-a-session' : id;
        let headers: Record<string, string> = {};
        headers = withHeader(headers, 'mcp-session-id', sessionHeader);
        headers = withHeader(headers, 'authorization', sent);
        headers = withHeader(headers, 'accept', accept);
        headers = withHeader(headers, 'content-type', contentType);
        headers = withHeader(headers, 'origin', origin);
        headers = withHeader(headers, 'host', host);
        if (method === 'OPTIONS' && origin !== undefined) headers = withHeader(headers, 'access-control-request-method', 'POST');
        return { port: 'agent', method, path, headers, body: method === 'GET' ? undefined : payload };
      });
  },
  check(stack, request, answer) {
    const problems: string[] = [];
    const known = ['/mcp', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/authorize', '/token', '/register'];
    const pathname = request.path.split('?')[0] ?? '';
    if (!known.includes(pathname)) {
      const message = jsonRpcOf(answer) as { error?: { code?: number; message?: string } } | undefined;
      if (answer.status !== 404 || message?.error?.code !== -32601 || message.error.message !== 'Not found') problems.push('spec 4.1: any other path answers 404 -32601 Not found');
    }
    problems.push(...originProblems(request, answer, pathname));
    return problems;
  },
  async after(stack, _request, answer: FuzzAnswer) {
    const opened = answer.headers['mcp-session-id'];
    if (typeof opened === 'string' && opened !== stack.sessionId) {
      await stack.send({ port: 'agent', method: 'DELETE', path: '/mcp', headers: { 'mcp-session-id': opened, authorization: `Bearer ${stack.agentKey}` } });
    }
  },
};
