import fc from 'fast-check';
import type { FuzzStack } from '../fuzz-stack.ts';
import { jsonRpcOf, type FuzzAnswer, type FuzzRequest } from '../http-exchange.ts';
import { brokenJsonText, hostileJson, hostileText, percentEncode, plausible } from '../hostile-values.ts';
import type { Surface } from './surface.ts';

const form = (fields: Record<string, unknown>) =>
  Object.entries(fields)
    .map(([name, value]) => `${percentEncode(name)}=${percentEncode(typeof value === 'string' ? value : JSON.stringify(value) ?? '')}`)
    .join('&');

/** The eight internet-facing addresses with the bridge on (spec 4.3). */
export const bridgeSurface: Surface = {
  name: 'bridge',
  requests(stack: FuzzStack) {
    const clientId = plausible([stack.clientId, 'unknown-client']);
    const redirect = plausible(['http://127.0.0.1:9/callback', 'http://127.0.0.1:10/callback', 'https://evil.example/cb', 'http://127.evil.example/cb']);
    const authorizeFields = fc.record(
      { response_type: plausible(['code', 'token']), client_id: clientId, redirect_uri: redirect, code_challenge: plausible(['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM']), code_challenge_method: plausible(['S256', 'plain']), state: hostileText, resource: plausible([`http://127.0.0.1:${stack.agentPort}/mcp`]), scope: hostileText, form_token: hostileText, key: plausible(['pcg_wrong', stack.agentKey.slice(0, 10)]) },
      { requiredKeys: [] },
    );
    const tokenFields = fc.record(
      { grant_type: plausible(['authorization_code', 'refresh_token', 'client_credentials']), code: hostileText, refresh_token: hostileText, code_verifier: hostileText, client_id: clientId, redirect_uri: redirect, resource: hostileText },
      { requiredKeys: [] },
    );
    const basic = fc.oneof(fc.constant(undefined), fc.constantFrom('Basic JQ==', 'Basic %%%', 'Basic ', `Basic ${Buffer.from('%:x').toString('base64')}`, `Basic ${Buffer.from('a\u0000b:').toString('base64')}`), hostileText.map((text) => `Basic ${Buffer.from(text).toString('base64')}`));
    return fc
      .oneof(
        fc.constantFrom('/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server').map((path) => ({ method: 'GET', path, headers: {} })),
        fc.oneof(fc.record({ client_name: hostileText, redirect_uris: fc.oneof(fc.array(redirect, { maxLength: 3 }), hostileJson), grant_types: hostileJson, token_endpoint_auth_method: plausible(['none', 'client_secret_basic']) }, { requiredKeys: [] }), hostileJson, brokenJsonText).map((body) => ({ method: 'POST', path: '/register', headers: { 'content-type': 'application/json' }, body })),
        authorizeFields.map((fields) => ({ method: 'GET', path: `/authorize?${form(fields)}`, headers: {} })),
        authorizeFields.map((fields) => ({ method: 'POST', path: '/authorize', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form(fields) })),
        fc.tuple(tokenFields, basic).map(([fields, authorization]) => ({ method: 'POST', path: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization ? { authorization } : {}) }, body: form(fields) })),
        fc.tuple(hostileJson, basic).map(([body, authorization]) => ({ method: 'POST', path: '/token', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body })),
      )
      .map((route): FuzzRequest => ({ port: 'agent', ...route }));
  },
};

/** Host and Origin tricks on both ports: the Console's Host check answers exactly 403 forbidden host. */
/**
 * Design 7.3 on the agent port (the fuzz stack's bridge is on, with a loopback public origin): a refused
 * Host, then a present and refused Origin, is 403 on /mcp and the bridge routes; an allowed origin's
 * preflight of a CORS path is 204 with its CORS headers; /authorize has no preflight (404).
 */
function agentHostProblems(request: FuzzRequest, answer: FuzzAnswer, hostAllowed: boolean): string[] {
  const message = (jsonRpcOf(answer) as { error?: { message?: string } } | undefined)?.error?.message;
  const origin = request.headers.origin;
  // /authorize is a page, never read cross-origin: it has no OPTIONS route, so any Host gets the 404.
  if (request.method === 'OPTIONS' && request.path === '/authorize') return answer.status === 404 ? [] : ['spec 4.1: OPTIONS /authorize is 404 -32601'];
  if (!hostAllowed) return answer.status === 403 && message === 'Forbidden host' ? [] : ['design 7.3: a refused Host on the agent port is 403 Forbidden host'];
  const originAllowed = origin === undefined || ['http://localhost:1', 'http://127.0.0.1'].includes(origin);
  if (!originAllowed) return answer.status === 403 && message === 'Forbidden origin' ? [] : ['design 7.3: a present, refused Origin is 403 Forbidden origin'];
  if (request.method !== 'OPTIONS') return [];
  if (origin === undefined) return answer.status === 404 ? [] : ['spec 4.1: OPTIONS without a preflight to answer keeps 404 -32601'];
  return answer.status === 204 && answer.headers['access-control-allow-origin'] === origin ? [] : ['design 7.3: a preflight from an allowed origin is 204 with CORS headers'];
}

export const hostSurface: Surface = {
  name: 'host',
  requests() {
    const host = fc.constantFrom('localhost', '127.0.0.1', '[::1]', 'evil.example', 'localhost.evil.example', '127.0.0.1.nip.io', '', 'localhost:1@evil', 'LOCALHOST', '0x7f.1', '127.1', '[::ffff:127.0.0.1]');
    const origin = fc.constantFrom(undefined, 'null', 'http://evil.example', 'http://localhost:1', 'http://127.0.0.1');
    const route = fc.constantFrom(
      { port: 'console' as const, method: 'GET', path: '/api/agents', exempt: false },
      { port: 'console' as const, method: 'GET', path: '/api/status', exempt: false },
      { port: 'console' as const, method: 'POST', path: '/api/agents', exempt: false },
      { port: 'console' as const, method: 'GET', path: '/healthz', exempt: true },
      { port: 'console' as const, method: 'GET', path: '/api/context', exempt: true },
      { port: 'agent' as const, method: 'POST', path: '/mcp', exempt: true },
      { port: 'agent' as const, method: 'OPTIONS', path: '/mcp', exempt: true },
      { port: 'agent' as const, method: 'GET', path: '/.well-known/oauth-authorization-server', exempt: true },
      { port: 'agent' as const, method: 'OPTIONS', path: '/token', exempt: true },
      { port: 'agent' as const, method: 'OPTIONS', path: '/authorize', exempt: true },
    );
    return fc.record({ host, origin, route }).map(({ host: hostName, origin: originValue, route: target }): FuzzRequest => ({
      port: target.port,
      method: target.method,
      path: target.path,
      headers: {
        host: hostName,
        ...(originValue ? { origin: originValue, 'access-control-request-method': 'POST' } : {}),
        'content-type': 'application/json',
        'x-fuzz-exempt': String(target.exempt),
      },
      body: target.method === 'POST' ? {} : undefined,
    }));
  },
  check(_stack, request, answer) {
    const bare = (request.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
    const allowed = ['localhost', '127.0.0.1', '[::1]'].includes(bare);
    if (request.port === 'agent') return agentHostProblems(request, answer, allowed);
    if (request.headers['x-fuzz-exempt'] === 'true') return [];
    if (!allowed && (answer.status !== 403 || answer.body !== '{"error":"forbidden host"}')) return ['spec 5: a disallowed Host gets 403 {"error":"forbidden host"}'];
    // A state-changing request from another origin is refused by the Console's cross-site check (README), not by the Host check.
    const crossSite = request.headers.origin !== undefined && answer.body === '{"error":"cross-site request refused"}';
    if (allowed && answer.status === 403 && !crossSite) return ['spec 5: an allowed Host is served'];
    return [];
  },
};
