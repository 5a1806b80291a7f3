import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ConnectionViewSchema } from '../connections/connections-types.ts';
import type { SignInService } from '../sign-ins/sign-in-service.ts';
import { readCookie, SIGN_IN_STATE_TTL_S, signInCookieName } from '../sign-ins/sign-in-state.ts';
import { CallbackQuerySchema, ClaimBodySchema, ProviderAppBodySchema, SignInProviderSchema, StartQuerySchema } from '../sign-ins/sign-in-types.ts';

const Params = z.object({ provider: z.string().min(1).max(100).regex(/^[a-z0-9-]+$/, { error: 'must be a provider kind' }) });

/**
 * Provider sign-in routes (design 4.4, 7.1), behind the Host check. The callback is the one route a
 * browser reaches from another site (the provider); it acts only with the state bound to the browser
 * that started the sign-in, through a `SameSite=Lax` cookie scoped to the callback.
 */
export function registerConnectRoutes(app: FastifyInstance, signIns: SignInService): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();

  routes.get('/api/connect', { schema: { response: { 200: z.object({ providers: z.array(SignInProviderSchema) }) } } }, async () => ({
    providers: await signIns.providers(),
  }));

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
            z.object({ status: z.literal('signed_in'), signInId: z.string(), claimHost: z.string(), connections: z.array(ConnectionViewSchema) }),
          ]),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return signIns.claim(request.params.provider, request.body, request.id);
    },
  );

  routes.get('/api/connect/:provider/start', { schema: { params: Params, querystring: StartQuerySchema } }, async (request, reply) => {
    const { provider } = request.params;
    const { location, nonce } = await signIns.start(provider, `${request.protocol}://${request.host}`, request.query.signInId);
    const cookie = `${signInCookieName(provider)}=${nonce}; Path=/api/connect/${provider}/callback; Max-Age=${SIGN_IN_STATE_TTL_S}; HttpOnly; SameSite=Lax`;
    return reply.header('set-cookie', cookie).header('cache-control', 'no-store').redirect(location, 302);
  });

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
      reply.header('set-cookie', `${name}=; Path=/api/connect/${provider}/callback; Max-Age=0; HttpOnly; SameSite=Lax`).header('cache-control', 'no-store');
      return signIns.callback(provider, request.query, readCookie(request.headers.cookie, name), request.id);
    },
  );
}
