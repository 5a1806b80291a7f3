import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { ImapTransport, ImapTransportConnectOptions } from 'imapflow';
import { OutboundRefusedError } from './icloud-guard.ts';

/**
 * iCloud's IMAP host. `*.icloud.com` (spec 1 item 9) cannot match it, so IMAP is pinned to exactly this
 * host and port with verified TLS (design §7.5): no other host is ever given the password.
 */
export const ICLOUD_IMAP_HOST = 'imap.mail.me.com';
export const ICLOUD_IMAP_PORT = 993;

export const IMAP_PIN_REFUSALS = {
  otherHost: `IMAP goes to ${ICLOUD_IMAP_HOST} only`,
  otherPort: `IMAP goes to port ${ICLOUD_IMAP_PORT} only`,
  cleartext: 'IMAP goes over implicit TLS only',
} as const;

/** Opens the TCP connection to a checked host and port. Tests dial a local server; the name stays checked. */
export type ImapDialer = (host: string, port: number) => Socket;

export type PinnedImapOptions = {
  /** Default: a TCP connection to the host and port. */
  dial?: ImapDialer;
  /**
   * CA certificates to trust instead of the system's (a test CA), or a function read at each connection (a
   * CA file that may be replaced while the worker runs). Verification is never turned off.
   */
  ca?: string | string[] | (() => string | string[]);
};

/** Whether an IMAP destination is the pinned one; the reason when it is not. */
export function imapDestinationProblem(options: { host: string; port: number; secure: boolean }): string | undefined {
  if (options.host.toLowerCase().replace(/\.$/, '') !== ICLOUD_IMAP_HOST) return IMAP_PIN_REFUSALS.otherHost;
  if (options.port !== ICLOUD_IMAP_PORT) return IMAP_PIN_REFUSALS.otherPort;
  if (!options.secure) return IMAP_PIN_REFUSALS.cleartext;
  return undefined;
}

/**
 * The IMAP client's only way out (`imapflow`'s `transport`): refuses any destination but the pinned one
 * before a byte is sent, then opens TLS that verifies the certificate for `imap.mail.me.com`. The
 * client's own TLS options are ignored, so nothing it is given can loosen verification. No STARTTLS: a
 * cleartext start is refused above.
 */
export function createPinnedImapTransport(options: PinnedImapOptions = {}): ImapTransport {
  const dial = options.dial ?? ((host: string, port: number) => netConnect({ host, port }));
  return {
    connect(destination: ImapTransportConnectOptions, onConnect: () => void) {
      const problem = imapDestinationProblem(destination);
      if (problem !== undefined) throw new OutboundRefusedError(`imaps://${destination.host}:${destination.port}`, problem);
      const socket = tlsConnect(
        {
          socket: dial(ICLOUD_IMAP_HOST, ICLOUD_IMAP_PORT),
          servername: ICLOUD_IMAP_HOST,
          rejectUnauthorized: true,
          minVersion: 'TLSv1.2',
          ...(options.ca !== undefined ? { ca: typeof options.ca === 'function' ? options.ca() : options.ca } : {}),
        },
        onConnect,
      );
      return socket;
    },
  };
}
