/**
 * The Console's Host check (spec 5), as pure functions. It guards the admin routes against DNS
 * rebinding: a page on another site that makes the browser talk to the local port still sends its own
 * name in `Host`. It is not authentication.
 */

export { hostHeaderValues, hostIsAllowed, LOOPBACK_HOST_NAMES, parseHost, requestHostIsAllowed, type HostParts, type RequestHost } from '@pcg/shared/http';

/** The exact 403 body of spec 7, used by the hook and its tests. */
export const FORBIDDEN_HOST_BODY = { error: 'forbidden host' } as const;

/** Route patterns the check skips (spec 5): `/healthz`, the read mirror and push-ingest. */
const EXEMPT_ROUTES = new Set(['/healthz', '/api/context', '/api/schema', '/api/query', '/api/fetch_live']);
const EXEMPT_ROUTE_PREFIXES = ['/api/records/', '/api/ingest/'];

/** Whether a matched route pattern is exempt. Unmatched requests (404s) are checked like any other. */
export function isHostCheckExempt(routePattern: string | undefined): boolean {
  if (routePattern === undefined) return false;
  return EXEMPT_ROUTES.has(routePattern) || EXEMPT_ROUTE_PREFIXES.some((prefix) => routePattern.startsWith(prefix));
}
