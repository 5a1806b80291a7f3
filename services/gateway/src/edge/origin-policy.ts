import { MCP_PARAM_HEADER_NAMES } from '../mcp/modern/param-headers.ts';

/**
 * The agent port's origin policy (design 7.3), as pure functions: which `Origin` and `Host` values a
 * request to `/mcp` (and to the bridge routes while the bridge is on) may carry, and the CORS answer an
 * allowed origin gets. A browser page on another site that reaches this port (DNS rebinding, or a plain
 * cross-site fetch) sends its own origin and its own name in `Host`; a non-browser client sends no `Origin`.
 */

export type OriginPolicy = {
  /** The saved public origin (the bridge's), or null while none is saved. */
  publicOrigin: string | null;
  /** `MCP_ALLOWED_ORIGINS`, each an origin as `URL.origin` writes it. */
  extraOrigins: readonly string[];
  /** `MCP_ALLOWED_HOSTS`: Host names (optionally with a port) accepted besides loopback and the public host. */
  extraHosts: readonly string[];
};

const LOOPBACK_ORIGIN_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The origin a value names when it is exactly a serialized http(s) origin; null otherwise ("null", paths, junk). */
export function parseOrigin(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  return url.origin === value.toLowerCase() ? url.origin : null;
}

/** Whether a present `Origin` header is allowed: loopback on any port, the public origin, or a listed one. */
export function originIsAllowed(value: string, policy: OriginPolicy): boolean {
  const origin = parseOrigin(value);
  if (origin === null) return false;
  if (LOOPBACK_ORIGIN_HOSTS.has(new URL(origin).hostname)) return true;
  return origin === policy.publicOrigin || policy.extraOrigins.includes(origin);
}

/**
 * The Host names allowed besides loopback: the public origin's name and the listed ones. The public name
 * matches on any port, like loopback: a proxy may or may not write the default port, and what the check
 * stops (a rebinding page) comes with a name of its own.
 */
export function allowedHostEntries(policy: OriginPolicy): string[] {
  const hosts = [...policy.extraHosts];
  if (policy.publicOrigin !== null) hosts.push(new URL(policy.publicOrigin).hostname);
  return hosts;
}

/** Request headers a browser client may send to the agent port (design 7.3). */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Mcp-Session-Id',
  'MCP-Protocol-Version',
  'Last-Event-ID',
  // Revision 2026-07-28 mirrors the method, the name and annotated tool arguments in headers (design 8.1).
  'Mcp-Method',
  'Mcp-Name',
  ...MCP_PARAM_HEADER_NAMES,
] as const;
/** Response headers a browser client must be able to read: the session id and the bridge's challenge. */
export const CORS_EXPOSED_HEADERS = ['Mcp-Session-Id', 'WWW-Authenticate'] as const;
/** How long a browser may cache a preflight, in seconds. */
export const CORS_MAX_AGE_SECONDS = 600;

/** Headers of every answer to an allowed origin on a CORS path. */
export function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
    vary: 'Origin',
  };
}

/** Headers of a preflight answer to an allowed origin, for a path serving `methods`. */
export function preflightHeaders(origin: string, methods: readonly string[]): Record<string, string> {
  return {
    ...corsHeaders(origin),
    'access-control-allow-methods': methods.join(', '),
    'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
    'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
  };
}
