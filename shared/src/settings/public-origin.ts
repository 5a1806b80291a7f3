/** What `parsePublicOrigin` answers: the origin to store, or the refusal to show the operator. */
export type PublicOriginResult = { ok: true; origin: string } | { ok: false; message: string };

const EXAMPLE_ORIGIN = 'https://pcg.example.com';

/**
 * The refusals of spec 5 rule 8. Every refusal of a parsable address names the origin to save; the
 * code and the tests both build the texts here.
 */
export const PUBLIC_ORIGIN_RULES = {
  /** `parts` as `describeExtras` names them, e.g. `the path "/mcp"`. */
  originOnly: (parts: readonly string[], origin: string) =>
    `publicOrigin must be an origin only: remove ${joinParts(parts)}${parts.length > 1 ? ',' : ''} and save "${origin}"`,
  httpsRequired: (origin: string) =>
    `publicOrigin must use https, because agent keys and bridge tokens cross it (http is allowed only for localhost, 127.x and [::1]): save "${origin}"`,
  notAnOrigin: `publicOrigin must be an https origin such as "${EXAMPLE_ORIGIN}"; send null to switch the bridge off`,
  /** How each extra part is named in `originOnly`. Credentials are named, never echoed. */
  parts: {
    path: (path: string) => `the path "${path}"`,
    query: (query: string) => (query === '' ? 'the empty query "?"' : `the query "?${query}"`),
    fragment: (fragment: string) => (fragment === '' ? 'the empty fragment "#"' : `the fragment "#${fragment}"`),
    username: 'the username',
    password: 'the password',
  },
} as const;

function joinParts(parts: readonly string[]): string {
  if (parts.length <= 1) return parts.join('');
  return `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

function isLoopback(hostname: string): boolean {
  // The URL parser has already normalised IPv4 (`127.1` → `127.0.0.1`) and IPv6 (`[0::1]` → `[::1]`).
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * The parts of a parsed URL that an origin must not have. `URL.search` and `URL.hash` are empty both
 * for "none" and for a bare `?` or `#`, so those two are read from the serialisation: outside the query
 * and the fragment, the serialiser percent-encodes `?` and `#`.
 */
function describeExtras(url: URL): string[] {
  const rules = PUBLIC_ORIGIN_RULES.parts;
  const [beforeFragment = '', ...fragment] = url.href.split('#');
  const queryStart = beforeFragment.indexOf('?');
  const extras: string[] = [];
  if (url.pathname !== '/') extras.push(rules.path(url.pathname));
  if (queryStart !== -1) extras.push(rules.query(beforeFragment.slice(queryStart + 1)));
  if (fragment.length > 0) extras.push(rules.fragment(fragment.join('#')));
  if (url.username !== '') extras.push(rules.username);
  if (url.password !== '') extras.push(rules.password);
  return extras;
}

/**
 * Validates and normalises the public address of the OAuth bridge (spec 5 rule 8): an https origin
 * (http only on a loopback host, for local tests), with no path, query, fragment or credentials. The
 * stored form is `URL.origin`: lower-case punycode host, default port dropped, no trailing slash.
 * A non-default port is kept, although hosted agents connect out on port 443 only.
 */
export function parsePublicOrigin(input: string): PublicOriginResult {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { ok: false, message: PUBLIC_ORIGIN_RULES.notAnOrigin };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, message: PUBLIC_ORIGIN_RULES.notAnOrigin };
  // The port is left out of the suggestion: an http port is rarely the https one, and hosted agents use 443.
  if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
    return { ok: false, message: PUBLIC_ORIGIN_RULES.httpsRequired(`https://${url.hostname}`) };
  }
  const extras = describeExtras(url);
  if (extras.length > 0) return { ok: false, message: PUBLIC_ORIGIN_RULES.originOnly(extras, url.origin) };
  return { ok: true, origin: url.origin };
}

/** `${origin}/mcp` — the URL agents connect to and the bridge's OAuth resource. */
export function mcpResourceOf(origin: string): string {
  return `${origin}/mcp`;
}
