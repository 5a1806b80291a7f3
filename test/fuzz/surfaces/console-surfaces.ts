import fc from 'fast-check';
import { SECTORS } from '@pcg/shared/sectors';
import type { FuzzStack } from '../fuzz-stack.ts';
import type { FuzzRequest } from '../http-exchange.ts';
import { asText, brokenJsonText, hostileJson, hostileNumber, hostileText, pathSegment, plausible, queryString } from '../hostile-values.ts';
import { authorization, withHeader, type Surface } from './surface.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };
const OBJECTS = ['finance.transaction', 'finance.account', 'health.sample', 'home.entity', 'calendar.event'] as const;
const FIELDS = ['id', 'amount', 'posted_on', 'synced_at', 'start_at', 'state', 'metric'] as const;
const OPS = ['eq', 'lt', 'gte', 'in', 'between', 'contains', 'is_null'] as const;

const queryBody = fc.oneof(
  { weight: 3, arbitrary: fc.record({ object: plausible(OBJECTS, 5), where: fc.array(fc.record({ field: plausible(FIELDS), op: plausible(OPS), value: hostileJson }), { maxLength: 3 }), order_by: fc.array(fc.record({ field: plausible(FIELDS), direction: plausible(['asc', 'desc']) }), { maxLength: 2 }), limit: hostileNumber, cursor: hostileText }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: hostileJson },
  { weight: 1, arbitrary: brokenJsonText },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

function decodesAsUtf8(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** The five agent reads over REST (spec 4.4): 401 without a well-formed key, 403 for a refused one. */
export const mirrorSurface: Surface = {
  name: 'mirror',
  requests(stack: FuzzStack) {
    const sector = plausible(SECTORS, 4).map(asText);
    return fc
      .record({
        route: fc.oneof(
          fc.constant({ method: 'GET', path: '/api/context' }),
          sector.map((value) => ({ method: 'GET', path: `/api/schema?sector=${encodeURIComponent(value.replace(/[\ud800-\udfff]/g, ''))}` })),
          queryBody.map((body) => ({ method: 'POST', path: '/api/query', body })),
          fc.tuple(pathSegment, pathSegment).map(([a, b]) => ({ method: 'GET', path: `/api/records/${a}/${b}` })),
          fc.tuple(fc.constantFrom(...SECTORS), pathSegment).map(([a, b]) => ({ method: 'GET', path: `/api/records/${a}/${b}` })),
          queryBody.map((body) => ({ method: 'POST', path: '/api/fetch_live', body })),
        ),
        authorization: authorization(stack.agentKey),
        contentType: fc.constantFrom('application/json', 'text/plain', undefined),
      })
      .map(({ route, authorization, contentType }): FuzzRequest => ({
        port: 'console',
        method: route.method,
        path: route.path,
        headers: withHeader(withHeader({}, 'authorization', authorization), 'content-type', 'body' in route && route.body !== undefined ? contentType : undefined),
        body: 'body' in route ? route.body : undefined,
      }));
  },
  check(stack, request, answer) {
    const sent = request.headers.authorization;
    // Spec 5: the key is checked first, even for a path that does not decode.
    if (sent === undefined || /^Bearer $|^Basic /.test(sent)) return answer.status === 401 ? [] : ['spec 5: the mirror answers 401 for a missing or malformed key'];
    if (!sent.toLowerCase().endsWith(` ${stack.agentKey.toLowerCase()}`)) return answer.status === 403 || answer.status === 401 ? [] : ['spec 5: the mirror answers 403 for a refused key'];
    // With a standing key, a path that is not valid UTF-8 once decoded is refused before any route (400).
    if (!decodesAsUtf8(request.path)) return answer.status === 400 ? [] : ['a path that is not UTF-8 is a 400'];
    return [];
  },
};

/** `GET /api/audit` with every filter, cursor and limit shape (spec 4.5). */
export const auditSurface: Surface = {
  name: 'audit',
  requests() {
    return queryString(['agent', 'tool', 'decision', 'sector', 'since', 'before', 'limit', 'outcome']).map((query): FuzzRequest => ({ port: 'console', method: 'GET', path: `/api/audit?${query}`, headers: {} }));
  },
  check(_stack, request, answer) {
    const params = new URLSearchParams(request.path.split('?')[1] ?? '');
    if (answer.status === 400 && params.has('before') && answer.body.includes("'before'")) {
      const expected = "invalid 'before' cursor: echo the previous page's x-gateway-audit-next header value unmodified";
      return answer.body.includes(expected) ? [] : ['spec 4.5: the cursor refusal carries the exact message'];
    }
    if (answer.status === 200 && answer.headers['x-gateway-audit-has-more'] === undefined) return ['spec 4.5: every 200 carries x-gateway-audit-has-more'];
    return [];
  },
};

/** The admin routes: agents, connections, sign-ins, finance account matches, settings, the data inspector, the operator reads and acts, and the Console page. */
export function adminSurface(): Surface {
  return {
    name: 'admin',
    requests(stack: FuzzStack) {
      const protectedNames = new Set([stack.agentName]);
      const name = fc.oneof(fc.constantFrom('fuzz-other', 'a', 'x'.repeat(300)), hostileText).filter((value) => !protectedNames.has(value));
      const id = fc.oneof(pathSegment, fc.constant('00000000-0000-4000-8000-000000000000')).filter((value) => value !== stack.connectionId);
      const agentBody = fc.oneof(fc.record({ name, sectors: fc.oneof(fc.array(plausible([...SECTORS, '*']), { maxLength: 4 }), hostileJson), expiresInDays: fc.oneof(hostileNumber, fc.constant(null), hostileText) }, { requiredKeys: [] }), hostileJson, brokenJsonText);
      const connectionBody = fc.oneof(fc.record({ provider: plausible(['home-assistant', 'health-auto-export', 'microsoft', 'icloud']), displayName: hostileText, syncIntervalMinutes: hostileNumber, credentials: fc.oneof(fc.record({ baseUrl: plausible(['http://127.0.0.1:9', 'file:///etc/passwd', 'http://[::1]:1']), token: hostileText }), hostileJson) }, { requiredKeys: [] }), hostileJson, brokenJsonText);
      const provider = fc.oneof(fc.constantFrom('home-assistant', 'health-auto-export', 'plaid', 'google', 'gmail', 'whoop', 'simplefin', 'no-such-provider'), pathSegment);
      // A browser's navigation gets the sign-in's result page; anything else gets JSON.
      const browser = fc.constantFrom(undefined, 'text/html,*/*;q=0.8', 'application/json');
      const segment = (value: string) => encodeURIComponent(value.replace(/[\ud800-\udfff]/g, '\ufffd')).slice(0, 600);
      return fc
        .oneof(
          agentBody.map((body) => ({ method: 'POST', path: '/api/agents', body })),
          fc.tuple(name, agentBody).map(([who, body]) => ({ method: 'PATCH', path: `/api/agents/${segment(who)}`, body })),
          fc.tuple(name, fc.constantFrom('rotate', 'revoke')).map(([who, act]) => ({ method: 'POST', path: `/api/agents/${segment(who)}/${act}` })),
          name.map((who) => ({ method: 'DELETE', path: `/api/agents/${segment(who)}` })),
          fc.constant({ method: 'GET', path: '/api/agents' }),
          connectionBody.map((body) => ({ method: 'POST', path: '/api/connections', body })),
          fc.tuple(id, connectionBody).map(([which, body]) => ({ method: 'PATCH', path: `/api/connections/${which}`, body })),
          fc.tuple(id, fc.constantFrom('sync', 'pause', 'resume', 'rotate-secret')).map(([which, act]) => ({ method: 'POST', path: `/api/connections/${which}/${act}` })),
          id.map((which) => ({ method: 'DELETE', path: `/api/connections/${which}` })),
          fc.constant({ method: 'GET', path: '/api/connections' }),
          fc
            .oneof(
              fc.record(
                {
                  setupToken: fc.oneof(plausible([Buffer.from('https://127.0.0.1:9/simplefin/claim/x').toString('base64'), Buffer.from('http://bridge.example/claim/x').toString('base64'), 'not-a-token']), hostileText),
                  confirmHost: plausible(['127.0.0.1:9', 'bridge.example']),
                  syncIntervalMinutes: hostileNumber,
                },
                { requiredKeys: [] },
              ),
              hostileJson,
            )
            .map((body) => ({ method: 'POST', path: '/api/connect/simplefin/claim', body })),
          fc.oneof(fc.record({ publicOrigin: plausible(['https://pcg.example.com', 'http://127.0.0.1:1', null, 'https://a.example/path', 'ftp://x']), timeZone: plausible(['Europe/Berlin', 'utc', null, '+02:00', 'Mars/Olympus', 'EST']), serviceName: hostileText }, { requiredKeys: [] }), hostileJson).map((body) => ({ method: 'PUT', path: '/api/settings', body })),
          fc.constant({ method: 'GET', path: '/api/settings' }),
          fc.tuple(pathSegment, queryBody).map(([sector, body]) => ({ method: 'POST', path: `/api/data/${sector}`, body })),
          fc.tuple(plausible(SECTORS).map(asText), pathSegment).map(([sector, which]) => ({ method: 'GET', path: `/api/data/${segment(sector)}/${which}` })),
          fc.constant({ method: 'GET', path: '/api/operator/context' }),
          queryString(['sector']).map((query) => ({ method: 'GET', path: `/api/operator/schema?${query}` })),
          fc.constant({ method: 'GET', path: '/api/status' }),
          fc.constant({ method: 'GET', path: '/metrics' }),
          queryBody.map((body) => ({ method: 'POST', path: '/api/operator/fetch_live', body })),
          fc.tuple(plausible(SECTORS).map(asText), fc.oneof(fc.record({ format: plausible(['jsonl', 'csv']) }, { requiredKeys: [] }), hostileJson)).map(([sector, body]) => ({ method: 'POST', path: `/api/export/${segment(sector)}`, body })),
          fc.constant({ method: 'GET', path: '/api/providers' }),
          fc.constant({ method: 'GET', path: '/api/sign-ins' }),
          fc.tuple(provider, fc.oneof(fc.record({ clientId: hostileText, clientSecret: hostileText, environment: plausible(['sandbox', 'production']) }, { requiredKeys: [] }), hostileJson, brokenJsonText)).map(([kind, body]) => ({ method: 'PUT', path: `/api/connect/${kind}/app`, body })),
          fc.constant({ method: 'GET', path: '/api/finance/account-matches' }),
          fc
            .tuple(id, fc.oneof(fc.record({ same: plausible([true, false]) }, { requiredKeys: [] }), hostileJson, brokenJsonText))
            .map(([which, body]) => ({ method: 'POST', path: `/api/finance/account-matches/${which}`, body })),
          fc.tuple(provider, queryString(['signInId']), browser).map(([kind, query, accept]) => ({ method: 'GET', path: `/api/connect/${kind}/start?${query}`, accept })),
          fc.tuple(provider, queryString(['code', 'state', 'error']), browser).map(([kind, query, accept]) => ({ method: 'GET', path: `/api/connect/${kind}/callback?${query}`, accept })),
          fc.oneof(fc.constant('/'), fc.constantFrom('main.ts', 'console.css', 'index.html', 'tsconfig.json', 'csv.test.ts'), pathSegment.map((name) => `/assets/${name}`)).map((path) => ({ method: 'GET', path: path.startsWith('/') ? path : `/assets/${path}` })),
          fc.constant({ method: 'GET', path: '/healthz' }),
        )
        .map((route): FuzzRequest => ({
          port: 'console',
          method: route.method,
          path: route.path,
          headers: withHeader('body' in route ? JSON_HEADERS : {}, 'accept', 'accept' in route ? route.accept : undefined),
          body: 'body' in route ? route.body : undefined,
        }));
    },
  };
}
