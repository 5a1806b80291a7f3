import { lookup as dnsLookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import { agentPortConfig, consolePortConfig } from '../config/index.ts';
import { AddressRefusedError, shownAddress } from './address-refused-error.ts';
import { addressRefusal, bareHost, canonicalAddress, isLoopback, nameRefusal, parseAddress } from './refused-addresses.ts';

/** A port this gateway serves itself, and its name as a refusal says it. */
export type OwnPort = { port: number; name: string };

/** One answer of a name lookup. */
export type ResolvedAddress = { address: string; family: number };

export type AddressPolicyOptions = {
  /** The gateway's own ports (the Console's and the agent port), refused on this machine's addresses. */
  ownPorts: readonly OwnPort[];
  /** Every address a name has; default the system resolver (`dns.lookup` with `all`). */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** This machine's addresses besides loopback; default every interface's, read at each check. */
  localAddresses?: () => Iterable<string>;
};

/** The gateway's own ports from its settings (spec 1 item 2); a port 0 (any free port, in tests) is none. */
export function gatewayOwnPorts(settings: { REST_PORT: number; MCP_HTTP_PORT: number }): OwnPort[] {
  return [
    { port: settings.REST_PORT, name: 'Console port (REST_PORT)' },
    { port: settings.MCP_HTTP_PORT, name: 'agent port (MCP_HTTP_PORT)' },
  ].filter((own) => own.port > 0);
}

/** The two ports as the settings default them (spec 1 item 2), for a policy made without settings at hand. */
export const DEFAULT_GATEWAY_PORTS = {
  REST_PORT: consolePortConfig.shape.REST_PORT.parse(undefined),
  MCP_HTTP_PORT: agentPortConfig.shape.MCP_HTTP_PORT.parse(undefined),
};

const defaultLookup = (hostname: string): Promise<ResolvedAddress[]> => dnsLookup(hostname, { all: true });

function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address));
}

const LOCALHOST = /(^|\.)localhost$/;

function defaultPort(protocol: string): number {
  return protocol === 'https:' ? 443 : 80;
}

/**
 * The outbound policy for source addresses (issue 32): which addresses the sync-worker may send a source's
 * credential to. Refused: anything but http and https; link-local and cloud metadata addresses in every
 * spelling (`refused-addresses.ts`); and the gateway's own ports on this machine (loopback, the unspecified
 * address, any local interface's address). Loopback and private ranges stay allowed: a home hub lives there.
 *
 * `urlRefusal` judges an address as written (at save: the Console looks nothing up). `checkedAddresses`
 * judges it as resolved, every address a name has, at connect time, and returns the addresses to dial, so
 * the addresses checked are the ones connected to (no second lookup a rebinding name could answer otherwise).
 */
export function createAddressPolicy(options: AddressPolicyOptions) {
  const lookup = options.lookup ?? defaultLookup;
  const localAddresses = options.localAddresses ?? interfaceAddresses;

  function ownPortRefusal(address: string, port: number, shownHost: string): string | undefined {
    const own = options.ownPorts.find((candidate) => candidate.port === port);
    const parsed = parseAddress(address);
    if (!own || !parsed) return undefined;
    const canonical = canonicalAddress(parsed);
    const local = isLoopback(parsed) || [...localAddresses()].some((candidate) => {
      const mine = parseAddress(candidate);
      return mine !== undefined && canonicalAddress(mine) === canonical;
    });
    return local ? `${shownHost}:${port} is this gateway's own ${own.name}` : undefined;
  }

  /** Why an address (already resolved, or an IP literal) may not be dialled on `port`, or undefined. */
  function resolvedRefusal(address: string, port: number): string | undefined {
    return addressRefusal(address) ?? ownPortRefusal(address, port, parseAddress(address)?.toString() ?? address);
  }

  /**
   * Why `url` is refused as written, or undefined: its scheme, an IP literal in any spelling (the URL
     * parser has already turned 2852039166, 0xa9fea9fe, 0251.0376.0251.0376 and 169.254.43518 into
     * 169.254.169.254), a metadata service's name, and `localhost` on one of the gateway's own ports.
     * A name is otherwise judged at connect time, when it is resolved.
     */
  function urlRefusal(input: URL | string): string | undefined {
    const url = typeof input === 'string' ? new URL(input) : input;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${url.protocol.replace(/:$/, '')} is not http or https`;
    const host = bareHost(url.hostname);
    const port = url.port === '' ? defaultPort(url.protocol) : Number(url.port);
    if (parseAddress(host)) return resolvedRefusal(host, port);
    if (LOCALHOST.test(host)) return ownPortRefusal('127.0.0.1', port, host);
    return nameRefusal(host);
  }

  /**
   * The addresses to connect to for `hostname` on `port`: every address the name resolves to, once all
   * passed (one refused address refuses the name: the resolver may hand out any of them); the literal
   * itself for an address. Throws `AddressRefusedError`; a name that does not resolve fails as the lookup does.
   */
  async function checkedAddresses(hostname: string, port: number, shown: string): Promise<ResolvedAddress[]> {
    const host = bareHost(hostname);
    const literal = parseAddress(host);
    if (literal) {
      const refusal = resolvedRefusal(host, port);
      if (refusal) throw new AddressRefusedError(shown, refusal);
      return [{ address: host, family: literal.kind() === 'ipv6' ? 6 : 4 }];
    }
    const named = nameRefusal(host);
    if (named) throw new AddressRefusedError(shown, named);
    const answers = await lookup(host);
    for (const answer of answers) {
      const refusal = resolvedRefusal(answer.address, port);
      if (refusal) throw new AddressRefusedError(shown, `${host} resolves to ${answer.address}: ${refusal}`);
    }
    if (answers.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
    return answers;
  }

  /** `urlRefusal`, then every address of the name (`checkedAddresses`): the check before a one-off send such as a token claim. */
  async function checkUrl(input: URL | string): Promise<void> {
    const url = typeof input === 'string' ? new URL(input) : input;
    const refusal = urlRefusal(url);
    if (refusal) throw new AddressRefusedError(shownAddress(url), refusal);
    await checkedAddresses(url.hostname, url.port === '' ? defaultPort(url.protocol) : Number(url.port), shownAddress(url));
  }

  return { urlRefusal, checkedAddresses, checkUrl };
}

export type AddressPolicy = ReturnType<typeof createAddressPolicy>;
