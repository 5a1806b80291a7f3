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
 * iCloud's 401 challenge: `WWW-Authenticate: X-MobileMe-AuthToken`, a scheme clients that wait for a Basic
 * challenge cannot answer (reference §8.1 [ICL-HA]: home-assistant/core issue 91711, "Auth method
 * x-mobileme-authtoken not supported yet"). The realm is a guess: no report in hand quotes the whole header.
 */
export const ICLOUD_CHALLENGE = 'X-MobileMe-AuthToken realm="Newcastle"';

/**
 * A fetch for tests of the iCloud guard: every name resolves to 127.0.0.1 and the test CA is trusted.
 * Verification stays on; the guard runs before this transport sees a request. A local server's 401 challenge
 * (Radicale's Basic) is answered as iCloud's (`ICLOUD_CHALLENGE`), so only a client that sends Basic
 * credentials unasked gets in, as with iCloud; `icloudChallenge: false` keeps the server's own.
 */
export function createLoopbackFetch(ca: string, options: { icloudChallenge?: boolean } = {}): { fetch: typeof fetch; close(): Promise<void> } {
  const agent = new Agent({ connect: { ca, lookup: loopbackLookup } });
  const loopbackFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const answer = await undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent });
    if (answer.status !== 401 || options.icloudChallenge === false) return answer;
    const headers = new Headers(answer.headers as unknown as Headers);
    headers.set('www-authenticate', ICLOUD_CHALLENGE);
    return new Response(answer.body as unknown as ConstructorParameters<typeof Response>[0], { status: answer.status, statusText: answer.statusText, headers });
  }) as unknown as typeof fetch;
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
