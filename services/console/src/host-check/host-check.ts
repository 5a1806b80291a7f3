import type { FastifyInstance } from 'fastify';
import { FORBIDDEN_HOST_BODY, hostHeaderValues, isHostCheckExempt, requestHostIsAllowed } from './host-fns.ts';

export type HostCheckOptions = {
  /** `REST_ALLOWED_HOSTS`: names accepted besides localhost, 127.0.0.1 and ::1; default none. */
  allowedHosts: readonly string[];
};

/**
 * The Host check on every Console route but the exempt ones (spec 5), as the first `onRequest` hook.
 * Register it before any route. The server must run with `requireHostHeader: false`, or Node answers a
 * Host-less HTTP/1.1 request with its own 400 before this hook can give the 403 the spec asks for.
 */
export function registerHostCheck(app: FastifyInstance, { allowedHosts }: HostCheckOptions): void {
  app.addHook('onRequest', async (request, reply) => {
    if (isHostCheckExempt(request.routeOptions.url)) return;
    const allowed = requestHostIsAllowed(
      { hostHeaders: hostHeaderValues(request.raw.rawHeaders), target: request.raw.url ?? '' },
      allowedHosts,
    );
    if (!allowed) return reply.code(403).send(FORBIDDEN_HOST_BODY);
  });
}
