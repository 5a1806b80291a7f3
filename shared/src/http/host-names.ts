/**
 * Host header checks against DNS rebinding, shared by the Console (spec 5) and the agent port (design 7.3):
 * a page on another site that makes a browser talk to a local port still sends its own name in `Host`.
 * They are not authentication.
 */

/** Always accepted, on any port. */
export const LOOPBACK_HOST_NAMES = ['localhost', '127.0.0.1', '::1'] as const;

export type HostParts = { name: string; port: string | undefined };

/**
 * Splits a Host value (or an allowed-hosts entry) into a lower-case name and an optional port.
 * IPv6 literals come in brackets (`[::1]:8787`); bare `::1` is taken as spec 5 writes it. Anything
 * else that is not a plain name with an optional numeric port is null, and never allowed.
 */
export function parseHost(value: string): HostParts | null {
  const host = value.trim().toLowerCase();
  if (host === '::1') return { name: '::1', port: undefined };
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(host);
  if (bracketed) return { name: bracketed[1] ?? '', port: bracketed[2] };
  const plain = /^([a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?)(?::(\d{1,5}))?$/.exec(host);
  if (plain) return { name: plain[1] ?? '', port: plain[2] };
  return null;
}

/**
 * Whether one Host value is allowed. Loopback names match on any port; an extra name matches on any
 * port, or only on its own port when the entry names one (`gateway.lan:8443`).
 */
export function hostIsAllowed(value: string | undefined, extraHosts: readonly string[]): boolean {
  if (value === undefined) return false;
  const host = parseHost(value);
  if (!host) return false;
  if ((LOOPBACK_HOST_NAMES as readonly string[]).includes(host.name)) return true;
  return extraHosts.some((entry) => {
    const allowed = parseHost(entry);
    return allowed !== null && allowed.name === host.name && (allowed.port === undefined || allowed.port === host.port);
  });
}

export type RequestHost = {
  /** Every `Host` header the request carried, in order (Node keeps only the first in `headers`). */
  hostHeaders: readonly string[];
  /** The request target as sent: origin-form `/path`, or absolute-form `http://host/path`. */
  target: string;
};

/**
 * The whole check for one request: exactly one allowed Host header, and an origin-form target, or an
 * absolute-form http(s) target whose authority is itself allowed and names the same host as `Host`
 * (Node and fastify route an absolute-form target by its path alone, so the authority is checked here).
 */
export function requestHostIsAllowed({ hostHeaders, target }: RequestHost, extraHosts: readonly string[]): boolean {
  if (hostHeaders.length !== 1) return false;
  const [hostHeader] = hostHeaders;
  if (!hostIsAllowed(hostHeader, extraHosts)) return false;
  if (target.startsWith('/')) return true;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) return false;
  let authority: URL;
  try {
    authority = new URL(target);
  } catch {
    return false;
  }
  if (authority.protocol !== 'http:' && authority.protocol !== 'https:') return false;
  if (authority.username !== '' || authority.password !== '') return false;
  if (!hostIsAllowed(authority.host, extraHosts)) return false;
  return parseHost(authority.host)?.name === parseHost(hostHeader ?? '')?.name;
}

/** All `Host` values from Node's raw header list (name, value, name, value, …). */
export function hostHeaderValues(rawHeaders: readonly string[]): string[] {
  const values: string[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    if (rawHeaders[index]?.toLowerCase() === 'host') values.push(rawHeaders[index + 1] ?? '');
  }
  return values;
}
