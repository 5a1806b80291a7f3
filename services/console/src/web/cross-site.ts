import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isHostCheckExempt } from '../host-check/host-fns.ts';

/** The 403 body of a state-changing request another page in the operator's browser sent. */
export const CROSS_SITE_REFUSED = { error: 'cross-site request refused' } as const;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const ACCEPTED_FETCH_SITES = new Set(['same-origin', 'none']);

const single = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * Whether a request may change state (design 7.2). Browsers send `Sec-Fetch-Site` and `Origin`; curl and
 * scripts send neither and are unaffected. Another site, or a page on another port of this machine
 * (`same-site`, or an Origin whose host differs from the Host the request came to), is refused.
 */
export function isSameOriginRequest(headers: FastifyRequest['headers']): boolean {
  const site = single(headers['sec-fetch-site']);
  if (site !== undefined && !ACCEPTED_FETCH_SITES.has(site.toLowerCase())) return false;
  const origin = single(headers.origin);
  if (origin === undefined) return true;
  const host = single(headers.host);
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && host !== undefined && url.host === host.toLowerCase();
  } catch {
    // `Origin: null` (a sandboxed frame, a file) and anything unparsable is not the Console.
    return false;
  }
}

/**
 * Refuses a cross-site state-changing request to the Console (design 7.2) before its body is read. The
 * Console has no login: without this, any page the operator opens could post to the admin routes. The
 * read mirror and push-ingest (exempt from the Host check too) carry their own key or secret.
 */
export function registerCrossSiteCheck(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if (SAFE_METHODS.has(request.method) || isHostCheckExempt(request.routeOptions.url)) return;
    if (!isSameOriginRequest(request.headers)) return reply.code(403).send(CROSS_SITE_REFUSED);
  });
}
