import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hostHeaderValues, requestHostIsAllowed } from '@pcg/shared/http';
import { BRIDGE_PATHS } from '../bridge/bridge-endpoints.ts';
import { JSONRPC_ERRORS, jsonRpcErrorBody } from '../mcp/jsonrpc-errors.ts';
import { allowedHostEntries, corsHeaders, originIsAllowed, preflightHeaders, type OriginPolicy } from './origin-policy.ts';

/** A path the policy covers: the methods it serves, whether only while the bridge is on, and whether it speaks CORS. */
type Scoped = { methods: readonly string[]; bridgeOnly: boolean; cors: boolean };

/**
 * Design 7.3: `/mcp` always; the bridge routes only while the bridge is on (off, they answer 404 like any
 * other path). CORS for `/mcp`, the three metadata documents, `/register` and `/token`; `/authorize` is a
 * page a browser navigates to and posts its own form on, so it is checked but never read cross-origin.
 */
const SCOPED = new Map<string, Scoped>([
  ['/mcp', { methods: ['GET', 'POST', 'DELETE'], bridgeOnly: false, cors: true }],
  [BRIDGE_PATHS.protectedResource, { methods: ['GET'], bridgeOnly: true, cors: true }],
  [BRIDGE_PATHS.protectedResourceMcp, { methods: ['GET'], bridgeOnly: true, cors: true }],
  [BRIDGE_PATHS.authorizationServer, { methods: ['GET'], bridgeOnly: true, cors: true }],
  [BRIDGE_PATHS.register, { methods: ['POST'], bridgeOnly: true, cors: true }],
  [BRIDGE_PATHS.token, { methods: ['POST'], bridgeOnly: true, cors: true }],
  [BRIDGE_PATHS.authorize, { methods: ['GET', 'POST'], bridgeOnly: true, cors: false }],
]);

export type OriginHookDeps = {
  /** The saved public origin now (null: bridge off). */
  publicOrigin(): string | null;
  /** `MCP_ALLOWED_ORIGINS`. */
  allowedOrigins: readonly string[];
  /** `MCP_ALLOWED_HOSTS`. */
  allowedHosts: readonly string[];
};

const refuse = (reply: FastifyReply, answer: typeof JSONRPC_ERRORS.forbiddenOrigin | typeof JSONRPC_ERRORS.forbiddenHost) =>
  reply.code(answer.status).send(jsonRpcErrorBody(answer));

/**
 * The Host and Origin checks and the CORS answers, as the first `onRequest` hook, and the OPTIONS routes of
 * the CORS paths. Register before any route. Headers go on the raw response, since /mcp hands its reply
 * over to the session transport (Node merges them into the transport's own `writeHead`).
 */
export function registerOriginPolicy(app: FastifyInstance, deps: OriginHookDeps): void {
  let cached: { publicOrigin: string | null; policy: OriginPolicy; hosts: string[] } | undefined;
  const policyNow = () => {
    const publicOrigin = deps.publicOrigin();
    if (cached?.publicOrigin !== publicOrigin) {
      const policy = { publicOrigin, extraOrigins: deps.allowedOrigins, extraHosts: deps.allowedHosts };
      cached = { publicOrigin, policy, hosts: allowedHostEntries(policy) };
    }
    return cached;
  };
  const inScope = (request: FastifyRequest): Scoped | undefined => {
    const scoped = SCOPED.get(request.routeOptions.url ?? '');
    return scoped && (!scoped.bridgeOnly || deps.publicOrigin() !== null) ? scoped : undefined;
  };

  app.addHook('onRequest', async (request, reply) => {
    const scoped = inScope(request);
    if (!scoped) return;
    const { policy, hosts } = policyNow();
    if (!requestHostIsAllowed({ hostHeaders: hostHeaderValues(request.raw.rawHeaders), target: request.raw.url ?? '' }, hosts)) {
      return refuse(reply, JSONRPC_ERRORS.forbiddenHost);
    }
    const origin = request.headers.origin;
    if (origin === undefined) return;
    if (!originIsAllowed(origin, policy)) return refuse(reply, JSONRPC_ERRORS.forbiddenOrigin);
    if (scoped.cors) for (const [name, value] of Object.entries(corsHeaders(origin))) reply.raw.setHeader(name, value);
  });

  for (const [path, scoped] of SCOPED) {
    if (!scoped.cors) continue;
    // Answered in the route's onRequest, before any body is parsed: a preflight has none, and a stray one
    // (or a content type) must not turn the answer into a 400 or 415.
    app.route({
      method: 'OPTIONS',
      url: path,
      onRequest: async (request, reply) => {
        const origin = request.headers.origin;
        // Not a preflight (no Origin), or a bridge route while the bridge is off: the agent port's 404 (spec 4.1).
        if (origin === undefined || !inScope(request)) return reply.code(JSONRPC_ERRORS.notFound.status).send(jsonRpcErrorBody(JSONRPC_ERRORS.notFound));
        return reply.code(204).headers(preflightHeaders(origin, scoped.methods)).send();
      },
      handler: async (_request, reply) => reply,
    });
  }
}
