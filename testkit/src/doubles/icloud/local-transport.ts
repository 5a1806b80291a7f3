import type { LookupAddress, LookupOptions } from 'node:dns';
import { connect as netConnect, Socket } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A resolver that answers 127.0.0.1 for every name: the client still connects to, verifies and sends
 * `Host`/SNI for the real name (p01-caldav.icloud.com), only the address is local.
 */
export function loopbackLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  void hostname;
  if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}

/**
 * A fetch for tests of the iCloud guard: every name resolves to 127.0.0.1 and the test CA is trusted.
 * Verification stays on; the guard runs before this transport sees a request.
 */
export function createLoopbackFetch(ca: string): { fetch: typeof fetch; close(): Promise<void> } {
  const agent = new Agent({ connect: { ca, lookup: loopbackLookup } });
  const loopbackFetch = ((input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent })) as unknown as typeof fetch;
  return { fetch: loopbackFetch, close: () => agent.close() };
}

/**
 * A TCP dialer for the IMAP pin in tests: whatever name and port it is asked for, it dials 127.0.0.1:`port`.
 * `refuseNext(n)` makes the next n dials fail as a refused connection would (a server that is down).
 */
export function loopbackDialer(port: number): {
  dial(host: string, port: number): Socket;
  dialed: Array<{ host: string; port: number }>;
  refuseNext(times: number): void;
} {
  const dialed: Array<{ host: string; port: number }> = [];
  let refusals = 0;
  return {
    dialed,
    refuseNext(times) {
      refusals = times;
    },
    dial(host, wanted) {
      dialed.push({ host, port: wanted });
      if (refusals > 0) {
        refusals -= 1;
        const socket = new Socket();
        process.nextTick(() => socket.destroy(Object.assign(new Error(`connect ECONNREFUSED ${host}:${wanted} (test)`), { code: 'ECONNREFUSED' })));
        return socket;
      }
      return netConnect({ host: '127.0.0.1', port });
    },
  };
}
