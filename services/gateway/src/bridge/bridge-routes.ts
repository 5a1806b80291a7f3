import formbody from '@fastify/formbody';
import rateLimit from '@fastify/rate-limit';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEvent, AuditRecorder, RefusalThrottle } from '@pcg/shared/audit';
import { dataExceptionState, describeDataException } from '@pcg/shared/http';
import type { Logger } from '@pcg/shared/logger';
import type { Redis } from '@pcg/shared/redis';
import { JSONRPC_ERRORS, jsonRpcErrorBody } from '../mcp/jsonrpc-errors.ts';
import { AUTHORIZE_PARAMS, checkAuthorizeRequest, withParams, type AuthorizeParams } from './authorize-request.ts';
import { authorizationServerMetadata, BRIDGE_PATHS, protectedResourceMetadata, type BridgeEndpoints } from './bridge-endpoints.ts';
import { BRIDGE_MESSAGES, invalidRequest, OAuthError, SIGN_IN_DENIALS, type Denial } from './bridge-errors.ts';
import { formIsFresh, signForm } from './form-token.ts';
import { PAGE_HEADERS, renderRefusalPage, renderSignInPage } from './sign-in-page.ts';
import type { SignInService } from './sign-in-service.ts';
import type { TokenService } from './token-service.ts';

/** Spec 8: 120 requests a minute per client address on registration, authorize and token. */
export const BRIDGE_RATE_LIMIT = { max: 120, windowMs: 60_000 } as const;

export type BridgeRouteDeps = {
  current(): BridgeEndpoints | null;
  signIn: SignInService;
  tokens: TokenService;
  /** HMAC key of the sign-in form token, shared by every gateway instance. */
  formKey: Buffer;
  serviceName: string;
  audit: AuditRecorder;
  throttle: RefusalThrottle;
  /** A `commands` client: the rate-limit windows live in Redis, shared by every gateway instance. */
  redis: Redis;
  log: Logger;
  now?: () => Date;
};

type Fields = Record<string, unknown>;

/** The single-valued string parameters of a query or form; a repeated one is reported. */
function readParams(source: unknown): { params: AuthorizeParams; repeated: string | undefined } {
  const fields = (source ?? {}) as Fields;
  const params: AuthorizeParams = {};
  let repeated: string | undefined;
  for (const name of AUTHORIZE_PARAMS) {
    const value = fields[name];
    if (typeof value === 'string' && value !== '') params[name] = value;
    else if (Array.isArray(value)) repeated ??= name;
  }
  return { params, repeated };
}

/** Spec-free texts of the bridge's own refusals of malformed input; the tests use them too. */
export const BRIDGE_INPUT_ERRORS = {
  basicClientId: 'the client id in the Authorization header is not form-urlencoded text (RFC 6749 2.3.1)',
} as const;

/**
 * A public client may send its id as the user of HTTP Basic instead of in the body. The user is
 * form-urlencoded (RFC 6749 2.3.1); one that does not decode is a malformed request.
 */
function clientIdFromBasic(header: string | undefined): string | undefined {
  const match = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const user = Buffer.from(match[1] as string, 'base64').toString('utf8').split(':')[0];
  if (!user) return undefined;
  try {
    return decodeURIComponent(user);
  } catch {
    throw invalidRequest(BRIDGE_INPUT_ERRORS.basicClientId);
  }
}

/**
 * The bridge addresses of spec 4.3 besides /mcp. They answer 404 -32601 like any unknown path while no
 * public origin is saved; the origin is read from the switch on every request, so saving or clearing it
 * takes effect at once. Registration, authorize and token share one rate-limit bucket per client address.
 */
export async function registerBridgeRoutes(app: FastifyInstance, deps: BridgeRouteDeps): Promise<void> {
  const now = deps.now ?? (() => new Date());
  const endpointsOf = (request: FastifyRequest) => (request as FastifyRequest & { bridge: BridgeEndpoints }).bridge;

  function recordDenial(tool: string, denial: Denial, args: Fields, requestId: string): void {
    const event: AuditEvent = {
      agentId: denial.agentName ?? null,
      tool,
      sector: null,
      decision: 'deny',
      denyReason: denial.reason,
      args,
      outcome: 'error',
      requestId,
    };
    if (denial.cheap) deps.throttle.record('bridge', event);
    else deps.audit.record(event);
  }

  const page = (reply: FastifyReply, status: number, html: string) => reply.code(status).headers(PAGE_HEADERS).send(html);

  await app.register(async (bridge) => {
    bridge.decorateRequest('bridge', null);
    bridge.addHook('onRequest', async (request, reply) => {
      const endpoints = deps.current();
      if (!endpoints) return reply.code(JSONRPC_ERRORS.notFound.status).send(jsonRpcErrorBody(JSONRPC_ERRORS.notFound));
      (request as FastifyRequest & { bridge: BridgeEndpoints }).bridge = endpoints;
    });
    bridge.setErrorHandler((error: FastifyError, request, reply) => {
      reply.header('cache-control', 'no-store');
      if (error instanceof OAuthError) return reply.code(error.status).send(error.toBody());
      if (dataExceptionState(error) !== null) {
        request.log.warn({ sqlState: dataExceptionState(error), route: request.routeOptions.url }, 'data exception answered as a bad request');
        return reply.code(400).send(invalidRequest(describeDataException(request)).toBody());
      }
      const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
      if (status < 500) return reply.code(400).send({ error: 'invalid_request', error_description: error.message });
      request.log.error({ err: error }, 'bridge request failed');
      return reply.code(500).send({ error: 'server_error', error_description: 'the sign-in service failed; try again' });
    });

    const serveProtectedResource = async (request: FastifyRequest) => protectedResourceMetadata(endpointsOf(request), deps.serviceName);
    bridge.get(BRIDGE_PATHS.protectedResource, serveProtectedResource);
    bridge.get(BRIDGE_PATHS.protectedResourceMcp, serveProtectedResource);
    bridge.get(BRIDGE_PATHS.authorizationServer, async (request) => authorizationServerMetadata(endpointsOf(request)));

    await bridge.register(async (limited) => {
      await limited.register(formbody, { bodyLimit: 16 * 1024 });
      await limited.register(rateLimit, {
        global: true,
        max: BRIDGE_RATE_LIMIT.max,
        timeWindow: BRIDGE_RATE_LIMIT.windowMs,
        redis: deps.redis,
        nameSpace: 'bridge:rate:',
        // A Redis that is away must not lock the operator out of signing in: the limit is for load, not secrecy.
        skipOnError: true,
        keyGenerator: (request) => request.ip,
        errorResponseBuilder: (_request, context) =>
          new OAuthError(429, 'too_many_requests', `more than ${context.max} requests a minute from this address; retry in ${context.after}`),
      });

      limited.post(BRIDGE_PATHS.register, async (request, reply) => reply.code(201).header('cache-control', 'no-store').send(await deps.signIn.register(request.body)));

      /** Checks the request; answers refusals and redirected errors itself, and hands back a valid one. */
      async function checked(request: FastifyRequest, reply: FastifyReply, source: unknown) {
        const endpoints = endpointsOf(request);
        const { params, repeated } = readParams(source);
        const check = repeated
          ? { kind: 'refused' as const, message: `${repeated} was sent more than once.`, denial: 'authorize: malformed request' }
          : await checkAuthorizeRequest(params, { findClient: deps.signIn.findClient, endpoints });
        if (check.kind === 'refused') {
          recordDenial('oauth_authorize', { reason: check.denial, cheap: true }, { clientId: params.client_id ?? null, redirectUri: params.redirect_uri ?? null }, request.id);
          await page(reply, 400, renderRefusalPage(deps.serviceName, check.message));
          return null;
        }
        if (check.kind === 'redirect') {
          await reply.code(302).header('cache-control', 'no-store').header('location', check.location).send();
          return null;
        }
        return { ...check, endpoints };
      }

      const signInPage = (checkedRequest: NonNullable<Awaited<ReturnType<typeof checked>>>, error?: string) =>
        renderSignInPage({
          serviceName: deps.serviceName,
          clientName: checkedRequest.client.clientName,
          request: checkedRequest.request,
          formToken: signForm(deps.formKey, checkedRequest.request, now().getTime()),
          error,
        });

      limited.get(BRIDGE_PATHS.authorize, async (request, reply) => {
        const valid = await checked(request, reply, request.query);
        if (valid) return page(reply, 200, signInPage(valid));
        return reply;
      });

      limited.post(BRIDGE_PATHS.authorize, async (request, reply) => {
        const form = (request.body ?? {}) as Fields;
        const valid = await checked(request, reply, form);
        if (!valid) return reply;
        const { request: authorization, endpoints } = valid;
        const args = { clientId: authorization.clientId, redirectUri: authorization.redirectUri };
        if (!formIsFresh(deps.formKey, typeof form.form_token === 'string' ? form.form_token : undefined, authorization, now().getTime())) {
          recordDenial('oauth_authorize', { reason: 'authorize: stale form', cheap: true }, args, request.id);
          return page(reply, 400, renderRefusalPage(deps.serviceName, BRIDGE_MESSAGES.staleForm));
        }
        if (form.decision === 'deny') {
          const location = withParams(authorization.redirectUri, { error: 'access_denied', error_description: 'the operator denied the sign-in', state: authorization.state, iss: endpoints.issuer });
          return reply.code(302).header('cache-control', 'no-store').header('location', location).send();
        }
        const key = typeof form.agent_key === 'string' ? form.agent_key.trim() : '';
        const outcome = key === '' ? ({ kind: 'key-refused', reason: 'no key was pasted' } as const) : await deps.signIn.approve(authorization, key, endpoints);
        switch (outcome.kind) {
          case 'key-refused':
            recordDenial('oauth_authorize', { reason: SIGN_IN_DENIALS.keyRefused, cheap: false }, { ...args, reason: outcome.reason }, request.id);
            return page(reply, 401, signInPage(valid, BRIDGE_MESSAGES.keyRefused(outcome.reason)));
          case 'no-expiry':
            recordDenial('oauth_authorize', { reason: SIGN_IN_DENIALS.keyHasNoExpiry, cheap: false, agentName: outcome.agentName }, args, request.id);
            return page(reply, 403, signInPage(valid, BRIDGE_MESSAGES.keyHasNoExpiry));
          case 'approved':
            return reply.code(302).header('cache-control', 'no-store').header('location', outcome.location).send();
        }
      });

      limited.post(BRIDGE_PATHS.token, async (request, reply) => {
        const body = { ...((request.body ?? {}) as Fields) };
        body.client_id ??= clientIdFromBasic(request.headers.authorization);
        const args = { grant: typeof body.grant_type === 'string' ? body.grant_type : null, clientId: typeof body.client_id === 'string' ? body.client_id : null };
        try {
          const issued = await deps.tokens.exchange(body, deps.signIn.findClient, endpointsOf(request));
          deps.audit.record({
            agentId: issued.agentName,
            tool: 'oauth_token',
            sector: null,
            decision: 'allow',
            args: { grant: issued.grant, clientId: issued.clientId, ...(issued.replayed ? { replayed: true } : {}) },
            outcome: 'ok',
            requestId: request.id,
          });
          return reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send(issued.answer);
        } catch (error) {
          if (error instanceof OAuthError && error.denial) recordDenial('oauth_token', error.denial, args, request.id);
          throw error;
        }
      });
    });
  });
}
