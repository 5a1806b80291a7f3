import type { LookupAddress, LookupOptions } from 'node:dns';
import net from 'node:net';

/**
 * Outbound traffic a test did not arrange is an error (conventions, Tests): a connection a test process
 * opens may reach only loopback (127.0.0.0/8, ::1, `localhost`) or a unix socket. Everything connects
 * through `net.Socket.prototype.connect` (net.connect, tls.connect, http, undici, pg, ioredis, IMAP), so
 * the check sits there and runs on the target as given, before any DNS lookup: a name other than
 * `localhost` is refused unless the caller hands in its own `lookup` (the iCloud tests' loopback
 * resolver), whose every answer must then be loopback. `fetch` is checked before it starts, so its
 * error names the address instead of undici's bare "fetch failed".
 */
export const NO_INTERNET_CODE = 'ERR_TEST_NO_INTERNET';

const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
loopback.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** Whether `host` (an address or a name, IPv6 with or without brackets) is loopback without asking DNS. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
  if (bare === 'localhost') return true;
  const family = net.isIP(bare);
  if (family === 4) return loopback.check(bare, 'ipv4');
  if (family === 6) return loopback.check(bare, 'ipv6');
  return false;
}

export class InternetRefusedError extends Error {
  readonly code = NO_INTERNET_CODE;
  constructor(target: string) {
    super(
      `no-internet guard: a test tried to reach ${target}; tests may connect only to loopback (127.0.0.0/8, ::1, localhost) or a unix socket — start a local double and point the code at it`,
    );
    this.name = 'InternetRefusedError';
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Lookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;
type Target = { path: string } | { host: string; port: unknown; lookup: Lookup | undefined };

/** The target of a `Socket#connect` call, in each of the forms node's own `normalizeArgs` accepts. */
function targetOf(args: unknown[]): { options: Record<string, unknown> | undefined; target: Target } {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  if (first !== null && typeof first === 'object') {
    const options = first as Record<string, unknown>;
    if (typeof options.path === 'string' && options.path !== '') return { options, target: { path: options.path } };
    const lookup = typeof options.lookup === 'function' ? (options.lookup as Lookup) : undefined;
    return { options, target: { host: typeof options.host === 'string' && options.host !== '' ? options.host : 'localhost', port: options.port, lookup } };
  }
  if (typeof first === 'string' && Number.isNaN(Number(first))) return { options: undefined, target: { path: first } };
  return { options: undefined, target: { host: typeof args[1] === 'string' ? args[1] : 'localhost', port: first, lookup: undefined } };
}

/** The caller's resolver, whose answers must all be loopback. */
function loopbackOnly(lookup: Lookup, target: string, refused: (error: InternetRefusedError) => void): Lookup {
  return (hostname, options, callback) =>
    lookup(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family);
      const addresses = Array.isArray(address) ? address.map((entry) => entry.address) : [address];
      const outside = addresses.find((candidate) => !isLoopbackHost(candidate));
      if (outside === undefined) return callback(null, address, family);
      const refusal = new InternetRefusedError(`${target} (its lookup answered ${outside})`);
      refused(refusal);
      callback(refusal, address, family);
    });
}

const INSTALLED = Symbol.for('pcg.no-internet-guard');

/**
 * Installs the guard in this process, once. `onRefused` hears of every refusal (the setup file prints
 * it, so a refusal that code under test swallows still shows in the run's output).
 */
export function installNoInternetGuard(onRefused: (error: InternetRefusedError) => void = () => undefined): void {
  const marked = globalThis as typeof globalThis & { [INSTALLED]?: true };
  if (marked[INSTALLED]) return;
  marked[INSTALLED] = true;

  const connect = net.Socket.prototype.connect as (this: net.Socket, ...args: unknown[]) => net.Socket;
  net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]): net.Socket {
    const { options, target } = targetOf(args);
    if ('path' in target || isLoopbackHost(target.host)) return connect.apply(this, args);
    const shown = `${target.host}:${String(target.port)}`;
    if (target.lookup && options) {
      const checked = { ...options, lookup: loopbackOnly(target.lookup, shown, onRefused) };
      if (Array.isArray(args[0])) (args[0] as unknown[])[0] = checked;
      else args[0] = checked;
      return connect.apply(this, args);
    }
    const refusal = new InternetRefusedError(shown);
    onRefused(refusal);
    // As a refused connection fails: asynchronously, through the socket's `error` event.
    process.nextTick(() => this.destroy(refusal));
    return this;
  } as typeof net.Socket.prototype.connect;

  const fetch = globalThis.fetch;
  globalThis.fetch = function guardedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const url = URL.parse(input instanceof Request ? input.url : String(input));
    // A caller's own dispatcher may resolve names to loopback: the socket check still covers it.
    const ownDispatcher = init !== undefined && 'dispatcher' in init;
    if (url && (url.protocol === 'http:' || url.protocol === 'https:') && !ownDispatcher && !isLoopbackHost(url.hostname)) {
      const refusal = new InternetRefusedError(`${url.protocol}//${url.host}`);
      onRefused(refusal);
      return Promise.reject(new TypeError(`fetch failed: ${refusal.message}`, { cause: refusal }));
    }
    return fetch(input, init);
  };
}

/**
 * For a test that starts a node process with an environment of its own: the `NODE_OPTIONS` that preloads
 * this guard there too (set by the setup file), so the process and the services it starts are held to it.
 */
export function guardedChildEnv(): { NODE_OPTIONS?: string } {
  return process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {};
}
