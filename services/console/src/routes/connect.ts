import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DomainError } from '@pcg/shared/errors';
import { HTTP_STATUS_OF_KIND } from '@pcg/shared/http';
import { findProvider } from '@pcg/shared/providers';
import { ConnectionViewSchema } from '../connections/connections-types.ts';
import { callbackPathOf } from '../providers/provider-views.ts';
import { refuseUnlessLocalPeer } from '../sign-ins/demo-peer.ts';
import type { SignInService } from '../sign-ins/sign-in-service.ts';
import { readCookie, SIGN_IN_STATE_TTL_S, signInCookieName } from '../sign-ins/sign-in-state.ts';
import { CallbackQuerySchema, ClaimBodySchema, DemoStartBodySchema, ProviderAppBodySchema, StartQuerySchema } from '../sign-ins/sign-in-types.ts';
import { prefersHtml } from '../web/accepts-html.ts';
import { signInResultPage, type SignInResultView } from '../web/sign-in-result-page.ts';

const Params = z.object({ provider: z.string().min(1).max(100).regex(/^[a-z0-9-]+$/, { error: 'must be a provider kind' }) });

/** What a browser is told when the sign-in failed inside: never the internal text. */
export const SIGN_IN_FAILED = 'the sign-in could not be completed; start it again';

const providerName = (kind: string) => findProvider(kind)?.displayName ?? kind;

/**
 * Runs a sign-in step for a browser: its outcome, or a refusal with the same status, becomes the result
 * page the operator reads instead of JSON. A client asking for JSON (curl, fetch: `*\/*`) gets JSON.
 */
async function asPage<T>(request: FastifyRequest, reply: FastifyReply, kind: string, step: () => Promise<T>, page?: (result: T) => SignInResultView): Promise<T | FastifyReply> {
  // The same address answers a page or JSON: no cache may hand one to the other.
  reply.header('vary', 'Accept').header('cache-control', 'no-store');
  if (!prefersHtml(request.headers.accept)) return step();
  const html = (view: SignInResultView) => reply.type('text/html; charset=utf-8').send(signInResultPage(view));
  let result: T;
  try {
    result = await step();
  } catch (error) {
    const known = error instanceof DomainError;
    if (!known) request.log.error({ err: error }, 'sign-in failed');
    reply.code(known ? HTTP_STATUS_OF_KIND[error.kind] : 500);
    return html({ outcome: 'refused', providerName: providerName(kind), code: known ? error.code : 'internal', message: known ? error.message : SIGN_IN_FAILED });
  }
  return page ? html(page(result)) : result;
}

/**
 * Provider sign-in routes (design 4.4, 7.1), behind the Host check. The callback is the one route a
 * browser reaches from another site (the provider); it acts only with the state bound to the browser
 * that started the sign-in, through a `SameSite=Lax` cookie scoped to the callback. A browser gets a page
 * it can read, linking back to the Console; a client asking for JSON gets JSON.
 */
export function registerConnectRoutes(app: FastifyInstance, signIns: SignInService): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();

  routes.put('/api/connect/:provider/app', { schema: { params: Params, body: ProviderAppBodySchema } }, async (request, reply) => {
    await signIns.saveApp(request.params.provider, request.body, request.id);
    return reply.code(204).send();
  });

  routes.post(
    '/api/connect/:provider/claim',
    {
      schema: {
        params: Params,
        body: ClaimBodySchema,
        response: {
          200: z.discriminatedUnion('status', [
            z.object({ status: z.literal('confirm'), claimHost: z.string(), https: z.boolean() }),
            z.object({ status: z.literal('signed_in'), signInId: z.string(), claimHost: z.string(), connections: z.array(ConnectionViewSchema), warning: z.string().optional() }),
          ]),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      if (request.body.demo) refuseUnlessLocalPeer(request.socket.remoteAddress);
      return signIns.claim(request.params.provider, request.body, request.id);
    },
  );

  routes.get('/api/connect/:provider/start', { schema: { params: Params, querystring: StartQuerySchema } }, async (request, reply) => {
    const { provider } = request.params;
    return asPage(request, reply, provider, async () => {
      const { location, nonce } = await signIns.start(provider, `${request.protocol}://${request.host}`, request.query.signInId);
      const cookie = `${signInCookieName(provider)}=${nonce}; Path=${callbackPathOf(provider)}; Max-Age=${SIGN_IN_STATE_TTL_S}; HttpOnly; SameSite=Lax`;
      return reply.header('set-cookie', cookie).redirect(location, 302);
    });
  });

  // A demo's new sign-in (issue 42), marked with its loopback stand-ins: asked from this machine only
  // (the socket's peer, not a header), for stand-ins on this machine only (the body's schema).
  routes.post(
    '/api/connect/:provider/demo-start',
    { schema: { params: Params, body: DemoStartBodySchema, response: { 200: z.object({ location: z.string() }) } } },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      refuseUnlessLocalPeer(request.socket.remoteAddress);
      const { provider } = request.params;
      const { location, nonce } = await signIns.start(provider, `${request.protocol}://${request.host}`, undefined, request.body.endpoints);
      reply.header('set-cookie', `${signInCookieName(provider)}=${nonce}; Path=${callbackPathOf(provider)}; Max-Age=${SIGN_IN_STATE_TTL_S}; HttpOnly; SameSite=Lax`);
      return { location };
    },
  );

  routes.get(
    '/api/connect/:provider/callback',
    {
      schema: {
        params: Params,
        querystring: CallbackQuerySchema,
        response: {
          200: z.object({
            status: z.literal('signed_in'),
            signInId: z.string(),
            renewed: z.boolean(),
            connections: z.array(ConnectionViewSchema),
            waiting: z.array(z.string()),
          }),
        },
      },
    },
    async (request, reply) => {
      const { provider } = request.params;
      const name = signInCookieName(provider);
      // The nonce is single-use like its state: the browser forgets it whatever the outcome.
      reply.header('set-cookie', `${name}=; Path=${callbackPathOf(provider)}; Max-Age=0; HttpOnly; SameSite=Lax`);
      return asPage(
        request,
        reply,
        provider,
        () => signIns.callback(provider, request.query, readCookie(request.headers.cookie, name), request.id),
        (result) => ({ outcome: 'signed_in', providerName: providerName(provider), renewed: result.renewed, connections: result.connections, waiting: result.waiting }),
      );
    },
  );
}
