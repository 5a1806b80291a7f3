import fc from 'fast-check';
import type { FuzzStack } from '../fuzz-stack.ts';
import type { FuzzRequest } from '../http-exchange.ts';
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
      { port: 'agent' as const, method: 'GET', path: '/.well-known/oauth-authorization-server', exempt: true },
    );
    return fc.record({ host, origin, route }).map(({ host: hostName, origin: originValue, route: target }): FuzzRequest => ({
      port: target.port,
      method: target.method,
      path: target.path,
      headers: { host: hostName, ...(originValue ? { origin: originValue } : {}), 'content-type': 'application/json', 'x-fuzz-exempt': String(target.exempt) },
      body: target.method === 'POST' ? {} : undefined,
    }));
  },
  check(_stack, request, answer) {
    if (request.port !== 'console' || request.headers['x-fuzz-exempt'] === 'true') return [];
    const bare = (request.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
    const allowed = ['localhost', '127.0.0.1', '[::1]'].includes(bare);
    if (!allowed && (answer.status !== 403 || answer.body !== '{"error":"forbidden host"}')) return ['spec 5: a disallowed Host gets 403 {"error":"forbidden host"}'];
    // A state-changing request from a page (an Origin that is not the Console's own) is refused: design 7.2.
    const crossSite = request.method !== 'GET' && request.headers.origin !== undefined;
    if (allowed && crossSite && answer.status === 403) return answer.body === '{"error":"cross-site request refused"}' ? [] : ['design 7.2: a cross-site request is refused with its own message'];
    if (allowed && answer.status === 403) return ['spec 5: an allowed Host is served'];
    return [];
  },
};
