import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { Transform, type TransformCallback } from 'node:stream';
import type { TestCertificates } from './test-ca.ts';

const CRLF = Buffer.from('\r\n');
/** A line that announces a literal (RFC 3501 §4.3, RFC 7888 `{n+}`): the next n bytes are data, not lines. */
const LITERAL_AT_END = /\{(\d+)\+?\}\r\n$/;
const UNTAGGED_ENABLED = /^\* ENABLED(?: |\r\n)/i;
const GREETING = /^\* OK \[CAPABILITY [^\]]*\]/i;
const TAGGED_OK_WITH_CAPABILITY = /^([^* ]+) OK \[CAPABILITY [^\]]*\] ?/i;
const UNTAGGED_CAPABILITY = /^\* CAPABILITY /i;

/**
 * iCloud's capability lists, from a session log of imap.mail.me.com (nextcloud/mail issue 3401): the greeting
 * offers no extension beyond SASL-IR and two AUTH mechanisms, the answer to the login carries no CAPABILITY
 * code, and a CAPABILITY asked after login lists (among others) CONDSTORE, ENABLE and QRESYNC, each list
 * headed by Apple's XAPPLEPUSHSERVICE (reference §8.6, Capabilities quirk; Foundry376/Mailspring-Sync pull
 * request 91 on the same proxy). A client that trusts the greeting sees no CONDSTORE.
 */
export const ICLOUD_GREETING_CAPABILITY = 'XAPPLEPUSHSERVICE IMAP4 IMAP4rev1 SASL-IR AUTH=ATOKEN AUTH=PLAIN';
export const ICLOUD_CAPABILITY =
  'XAPPLEPUSHSERVICE IMAP4 IMAP4rev1 CONDSTORE ENABLE QRESYNC QUOTA NAMESPACE UIDPLUS CHILDREN BINARY UNSELECT SORT CATENATE URLAUTH LANGUAGE ESEARCH ESORT THREAD=ORDEREDSUBJECT THREAD=REFERENCES CONTEXT=SEARCH CONTEXT=SORT WITHIN SASL-IR SEARCHRES METADATA ID XMSEARCH X-SUN-SORT ANNOTATE-EXPERIMENT-1 X-UNAUTHENTICATE X-SUN-IMAP XUM1 MULTISEARCH IDLE LIST-STATUS';

/**
 * The server's side of an IMAP stream rewritten where iCloud answers otherwise than Dovecot:
 * - every untagged `ENABLED` response is taken out, which is how iCloud answers `ENABLE CONDSTORE`: a tagged OK
 *   only, although CONDSTORE is then on (SELECT answers HIGHESTMODSEQ). Sources: nextcloud/mail issue 3401 (an
 *   iCloud session log: `C: 3 ENABLE QRESYNC`, `S: 3 OK ENABLE completed`, no `* ENABLED` line); lswith/imap-mcp
 *   issue 8 ("iCloud also returns an empty ENABLE confirmation list while plainly having enabled it");
 *   jstedfast/MailKit issue 1871 (QRESYNC "has not been enabled" after a successful ENABLE); issue 31 item 6;
 * - the greeting's CAPABILITY code becomes iCloud's pre-login list, the login's tagged OK loses its CAPABILITY
 *   code, and an untagged CAPABILITY answers iCloud's list (`ICLOUD_GREETING_CAPABILITY` before login,
 *   `ICLOUD_CAPABILITY` after), so a client must ask again after login to learn of CONDSTORE, as with iCloud.
 *   Dovecot's only tagged OK with a CAPABILITY code is the login's; that marks the session logged in.
 * Literals pass untouched, so message data that happens to read `* ENABLED` or `* CAPABILITY` is never changed.
 */
export class UntaggedEnabledFilter extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private literalLeft = 0;
  private atResponseStart = true;
  private greeted = false;
  private loggedIn = false;

  private readonly options: { capabilities?: boolean };

  /** `capabilities: false` leaves CAPABILITY as Dovecot answers it (only ENABLE is rewritten). */
  constructor(options: { capabilities?: boolean } = {}) {
    super();
    this.options = options;
  }

  private rewrite(text: string): string | undefined {
    if (UNTAGGED_ENABLED.test(text)) return undefined;
    if (this.options.capabilities === false) return text;
    if (!this.greeted) {
      this.greeted = true;
      return text.replace(GREETING, `* OK [CAPABILITY ${ICLOUD_GREETING_CAPABILITY}]`);
    }
    const login = TAGGED_OK_WITH_CAPABILITY.exec(text);
    if (login) {
      this.loggedIn = true;
      return text.replace(TAGGED_OK_WITH_CAPABILITY, `${login[1]} OK `);
    }
    if (UNTAGGED_CAPABILITY.test(text)) return `* CAPABILITY ${this.loggedIn ? ICLOUD_CAPABILITY : ICLOUD_GREETING_CAPABILITY}\r\n`;
    return text;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (;;) {
      if (this.literalLeft > 0) {
        if (this.pending.length === 0) break;
        const take = Math.min(this.literalLeft, this.pending.length);
        this.push(this.pending.subarray(0, take));
        this.pending = this.pending.subarray(take);
        this.literalLeft -= take;
        continue;
      }
      const end = this.pending.indexOf(CRLF);
      if (end < 0) break;
      const line = this.pending.subarray(0, end + CRLF.length);
      this.pending = this.pending.subarray(end + CRLF.length);
      const text = line.toString('latin1');
      const literal = LITERAL_AT_END.exec(text);
      const out = this.atResponseStart ? this.rewrite(text) : text;
      if (out === text) this.push(line);
      else if (out !== undefined) this.push(Buffer.from(out, 'latin1'));
      this.literalLeft = literal ? Number(literal[1]) : 0;
      this.atResponseStart = literal === null;
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.pending.length > 0) this.push(this.pending);
    done();
  }
}

export type ImapQuirkProxy = { port: number; close(): Promise<void> };

/**
 * A loopback proxy in front of a local Dovecot that answers as iCloud's IMAP does where Dovecot differs:
 * it ends the client's TLS with the test certificate (valid for imap.mail.me.com), opens TLS to Dovecot, and
 * passes everything through except what `UntaggedEnabledFilter` rewrites (ENABLE and CAPABILITY as iCloud answers them).
 */
export async function startImapQuirkProxy(options: { certs: TestCertificates; upstreamPort: number; servername: string; port?: number }): Promise<ImapQuirkProxy> {
  const open = new Set<Socket>();
  const server = createTlsServer({ cert: options.certs.cert, key: options.certs.key }, (client: TLSSocket) => {
    const upstream = tlsConnect({ host: '127.0.0.1', port: options.upstreamPort, servername: options.servername, ca: options.certs.ca });
    open.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(new UntaggedEnabledFilter()).pipe(client);
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
