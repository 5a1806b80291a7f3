import type { LookupFunction } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import type { AddressPolicy } from './address-policy.ts';
import { AddressRefusedError, shownAddress } from './address-refused-error.ts';

export type OutboundFetchOptions = {
  /** TLS and socket options of each connection (a test CA, say); the policy's check cannot be turned off here. */
  connect?: buildConnector.BuildOptions;
};

/**
 * A `fetch` whose every connection is dialled through the address policy: an undici Agent whose connect
 * step resolves the host once, refuses it when any of its addresses is refused (`checkedAddresses`), and
 * then dials only the addresses it checked, through a lookup that answers them (TLS is still verified for
 * the name). Each redirect hop, followed here or by the caller, opens its
 * connection through the same step; a pooled connection is one that was checked when it was opened.
 *
 * A refusal rejects with `AddressRefusedError` itself (not undici's "fetch failed"), so a caller can tell
 * a refused address from a source that could not be reached. Schemes other than http and https are
 * refused before anything else (undici would answer `data:` itself).
 */
export function createOutboundFetch(policy: AddressPolicy, options: OutboundFetchOptions = {}) {
  const agent = new Agent({
    connect(target, callback) {
      const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
      const shown = `${target.protocol}//${target.host ?? target.hostname}`;
      policy.checkedAddresses(target.hostname, port, shown).then(
        (checked) => {
          // The socket asks this lookup, not the resolver: it may try each checked address (IPv6 and IPv4,
          // as Node's family selection does), and none other.
          const lookup: LookupFunction = (_hostname, lookupOptions, answer) => {
            const [first] = checked;
            if (lookupOptions.all) answer(null, checked);
            else answer(null, first?.address ?? '', first?.family ?? 4);
          };
          buildConnector({ ...options.connect, lookup })(target, callback);
        },
        (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null),
      );
    },
  });

  async function outboundFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    if (input instanceof Request) throw new TypeError('the outbound fetch takes an address and options, not a Request');
    const url = new URL(input);
    const refusal = policy.urlRefusal(url);
    if (refusal) throw new AddressRefusedError(shownAddress(url), refusal);
    try {
      // undici's own fetch: Node's built-in one cannot take a dispatcher of this undici major. Its Response
      // is the same WHATWG shape (status, headers, body, text()).
      return (await undiciFetch(url, { ...(init as UndiciRequestInit), dispatcher: agent })) as unknown as Response;
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      throw cause instanceof AddressRefusedError ? cause : error;
    }
  }

  return {
    fetch: outboundFetch as typeof fetch,
    /** Closes the pooled connections. */
    close: () => agent.close(),
  };
}

export type OutboundFetch = ReturnType<typeof createOutboundFetch>;
