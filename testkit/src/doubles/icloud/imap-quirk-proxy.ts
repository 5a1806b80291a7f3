import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { Transform, type TransformCallback } from 'node:stream';
import type { TestCertificates } from './test-ca.ts';

const CRLF = Buffer.from('\r\n');
/** A line that announces a literal (RFC 3501 §4.3, RFC 7888 `{n+}`): the next n bytes are data, not lines. */
const LITERAL_AT_END = /\{(\d+)\+?\}\r\n$/;
const UNTAGGED_ENABLED = /^\* ENABLED(?: |\r\n)/i;

/**
 * The server's side of an IMAP stream with every untagged `ENABLED` response taken out, which is how iCloud
 * answers `ENABLE CONDSTORE`: a tagged OK only, although CONDSTORE is then on (SELECT answers HIGHESTMODSEQ).
 * Sources: nextcloud/mail issue 3401 (an iCloud session log: `C: 3 ENABLE QRESYNC`, `S: 3 OK ENABLE completed`,
 * no `* ENABLED` line); lswith/imap-mcp issue 8 ("iCloud also returns an empty ENABLE confirmation list while
 * plainly having enabled it"; HIGHESTMODSEQ present after ENABLE); issue 31 item 6. Literals pass untouched,
 * so message data that happens to read `* ENABLED` is never dropped.
 */
export class UntaggedEnabledFilter extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private literalLeft = 0;
  private atResponseStart = true;

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
      const drop = this.atResponseStart && UNTAGGED_ENABLED.test(text);
      if (!drop) this.push(line);
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
 * passes everything through except the untagged `ENABLED` responses (`UntaggedEnabledFilter`).
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
