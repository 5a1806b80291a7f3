import { isIP } from 'node:net';
import { SourceRejectedError } from '../kit/source-errors.ts';

/** The host pattern of spec 1 item 9: `*.icloud.com`, matched on a label boundary. */
export const ICLOUD_HOST_PATTERN = '*.icloud.com';
const ICLOUD_SUFFIX = '.icloud.com';
/** Redirects followed, one at a time, before the guard gives up (design §4.10). */
export const ICLOUD_MAX_REDIRECTS = 5;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Why the guard refused an address; the messages are fixed so the tests can name them. */
export const GUARD_REFUSALS = {
  notHttps: 'not https',
  userinfo: 'carries a user name or password',
  ipLiteral: 'is an IP address, not a name',
  outsidePattern: `host is outside ${ICLOUD_HOST_PATTERN}`,
  tooManyRedirects: `more than ${ICLOUD_MAX_REDIRECTS} redirects`,
  redirectWithoutLocation: 'a redirect without a usable Location',
} as const;

/**
 * An iCloud request the guard refused to send: nothing, and certainly no credential, went to `address`.
 * A rejection, not a retry: the same address would be refused again.
 */
export class OutboundRefusedError extends SourceRejectedError {
  readonly address: string;
  constructor(address: string, reason: string) {
    super(`iCloud: the address ${address} was refused (${reason}); no credential was sent to it`, 0, reason);
    this.address = address;
  }
}

/** The address as a message may show it: scheme, host and port only (never a path or userinfo). */
function shown(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/**
 * Why `url` may not be given an iCloud credential, or undefined when it may: https only, no userinfo,
 * no IP literal, and a host that ends in `.icloud.com` after at least one label (case-insensitive; the
 * URL parser has already lower-cased and IDNA-encoded it, and a trailing dot is not a different host).
 */
export function icloudAddressProblem(url: URL): string | undefined {
  if (url.protocol !== 'https:') return GUARD_REFUSALS.notHttps;
  if (url.username !== '' || url.password !== '') return GUARD_REFUSALS.userinfo;
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host.startsWith('[') || isIP(host) !== 0) return GUARD_REFUSALS.ipLiteral;
  if (!host.endsWith(ICLOUD_SUFFIX)) return GUARD_REFUSALS.outsidePattern;
  const label = host.slice(0, -ICLOUD_SUFFIX.length);
  if (label === '' || label.startsWith('.') || label.endsWith('.')) return GUARD_REFUSALS.outsidePattern;
  return undefined;
}

function assertAllowed(url: URL): void {
  const problem = icloudAddressProblem(url);
  if (problem !== undefined) throw new OutboundRefusedError(shown(url), problem);
}

export type GuardedFetchOptions = {
  /** The Apple ID and its app-specific password, sent as Basic (iCloud's challenge is not Basic, so preemptively). */
  credentials: { appleId: string; appPassword: string };
  /**
   * The transport that carries an already-checked request. Default the global fetch. Tests hand in a fetch
   * whose connections resolve iCloud names to a local server and trust a test CA; it cannot loosen the
   * checks, which run here before the transport sees a request.
   */
  transport?: typeof fetch;
};

function requestParts(input: string | URL | Request, init: RequestInit | undefined): { url: URL; method: string; headers: Headers; body: RequestInit['body'] } {
  if (input instanceof Request) {
    return { url: new URL(input.url), method: init?.method ?? input.method, headers: new Headers(init?.headers ?? input.headers), body: init?.body ?? null };
  }
  return { url: new URL(input), method: init?.method ?? 'GET', headers: new Headers(init?.headers), body: init?.body ?? null };
}

/**
 * The one way an iCloud HTTP request leaves the gateway (spec 1 item 9, design §4.10), shaped as `fetch` so a
 * protocol library can be handed it. Every address, the first and each redirect hop, is checked before
 * anything is sent to it; the Basic credential is attached here and only after the check, and any
 * `Authorization` a caller set is dropped. Redirects are followed by hand, one at a time, at most
 * `ICLOUD_MAX_REDIRECTS`. There is no option that skips a check.
 */
export function createGuardedFetch(options: GuardedFetchOptions): typeof fetch {
  const transport = options.transport ?? fetch;
  const basic = `Basic ${Buffer.from(`${options.credentials.appleId}:${options.credentials.appPassword}`, 'utf8').toString('base64')}`;

  return async function guardedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const parts = requestParts(input, init);
    let { url, method, body } = parts;
    parts.headers.delete('authorization');
    for (let hop = 0; ; hop += 1) {
      assertAllowed(url);
      const headers = new Headers(parts.headers);
      headers.set('authorization', basic);
      const response = await transport(url, { ...init, method, headers, body, redirect: 'manual' });
      if (!REDIRECTS.has(response.status)) return response;
      await response.body?.cancel().catch(() => undefined);
      const location = response.headers.get('location');
      let next: URL;
      try {
        if (location === null) throw new TypeError('no Location');
        next = new URL(location, url);
      } catch {
        throw new OutboundRefusedError(shown(url), GUARD_REFUSALS.redirectWithoutLocation);
      }
      if (hop >= ICLOUD_MAX_REDIRECTS) throw new OutboundRefusedError(shown(next), GUARD_REFUSALS.tooManyRedirects);
      // As browsers do: 303, and 301/302 after a POST, go on as a GET without the body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = null;
        parts.headers.delete('content-type');
      }
      url = next;
    }
  };
}
