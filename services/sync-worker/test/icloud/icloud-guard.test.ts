import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { createLoopbackFetch, createTestCertificates, loopbackDialer, type TestCertificates } from '@pcg/testkit/doubles';
import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuardedFetch, GUARD_REFUSALS, icloudAddressProblem, ICLOUD_MAX_REDIRECTS, OutboundRefusedError } from '../../src/connectors/icloud/icloud-guard.ts';
import { createPinnedImapTransport, ICLOUD_IMAP_HOST, IMAP_PIN_REFUSALS } from '../../src/connectors/icloud/icloud-imap-pin.ts';

type Seen = { host: string; path: string; authorization: string | undefined };

const credentials = { appleId: 'person@icloud.com', appPassword: 'abcd-efgh-ijkl-mnop' };
const basic = `Basic ${Buffer.from('person@icloud.com:abcd-efgh-ijkl-mnop').toString('base64')}`;

let certs: TestCertificates;
let server: Server;
let port: number;
let transport: ReturnType<typeof createLoopbackFetch>;
const seen: Seen[] = [];

/**
 * One HTTPS server answering for every name (the resolver sends them all to 127.0.0.1; its certificate,
 * from the test CA, names them all, so nothing but the guard stands between a request and it). It records
 * every request. `/to?next=<url>` redirects there; `/chain/<n>` redirects n more times inside the pattern.
 */
function answer(host: string, path: string): { status: number; location?: string } {
  const url = new URL(path, `https://${host}`);
  if (url.pathname === '/to') return { status: 302, location: url.searchParams.get('next') ?? '' };
  const chain = /^\/chain\/(\d+)$/.exec(url.pathname);
  if (chain) {
    const left = Number(chain[1]);
    return left === 0 ? { status: 200 } : { status: 307, location: `https://p${String(left).padStart(2, '0')}-caldav.icloud.com:${port}/chain/${left - 1}` };
  }
  return { status: 200 };
}

beforeAll(async () => {
  certs = createTestCertificates(['*.icloud.com', 'evil.test', 'icloud.com.evil.test', ICLOUD_IMAP_HOST]);
  server = createServer({ cert: certs.cert, key: certs.key }, (request, response) => {
    const host = (request.headers.host ?? '').replace(/:\d+$/, '');
    seen.push({ host, path: request.url ?? '', authorization: request.headers.authorization });
    const { status, location } = answer(host, request.url ?? '/');
    response.writeHead(status, location === undefined ? {} : { location });
    response.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  transport = createLoopbackFetch(certs.ca);
});

afterAll(async () => {
  await transport.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  certs.dispose();
});

function guarded() {
  seen.length = 0;
  return createGuardedFetch({ credentials, transport: transport.fetch });
}

async function refusal(promise: Promise<unknown>): Promise<OutboundRefusedError> {
  const error: unknown = await promise.then(() => undefined, (failure: unknown) => failure);
  expect(error).toBeInstanceOf(OutboundRefusedError);
  return error as OutboundRefusedError;
}

describe('the iCloud outbound guard (spec 1 item 9, design §4.10)', () => {
  it('sends the credential to an https *.icloud.com address', async () => {
    const fetchICloud = guarded();
    const response = await fetchICloud(`https://p01-caldav.icloud.com:${port}/`);
    expect(response.status).toBe(200);
    expect(seen).toEqual([{ host: 'p01-caldav.icloud.com', path: '/', authorization: basic }]);
  });

  it('refuses http://x.icloud.com and sends nothing', async () => {
    const fetchICloud = guarded();
    const error = await refusal(fetchICloud(`http://x.icloud.com:${port}/`));
    expect(error.detail).toBe(GUARD_REFUSALS.notHttps);
    expect(error.message).toContain('no credential was sent');
    expect(seen).toEqual([]);
  });

  it('refuses https://icloud.com.evil.test and sends nothing', async () => {
    const fetchICloud = guarded();
    expect((await refusal(fetchICloud(`https://icloud.com.evil.test:${port}/`))).detail).toBe(GUARD_REFUSALS.outsidePattern);
    expect(seen).toEqual([]);
  });

  it('follows a redirect from p01-caldav to p02-caldav, the credential going to each checked hop', async () => {
    const fetchICloud = guarded();
    const next = encodeURIComponent(`https://p02-caldav.icloud.com:${port}/home/`);
    const response = await fetchICloud(`https://p01-caldav.icloud.com:${port}/to?next=${next}`);
    expect(response.status).toBe(200);
    expect(seen.map(({ host, authorization }) => ({ host, authorization }))).toEqual([
      { host: 'p01-caldav.icloud.com', authorization: basic },
      { host: 'p02-caldav.icloud.com', authorization: basic },
    ]);
  });

  it('refuses a redirect to https://evil.test/: the server there receives no request, so no Authorization', async () => {
    const fetchICloud = guarded();
    const next = encodeURIComponent(`https://evil.test:${port}/`);
    const error = await refusal(fetchICloud(`https://p01-caldav.icloud.com:${port}/to?next=${next}`));
    expect(error.detail).toBe(GUARD_REFUSALS.outsidePattern);
    expect(error.address).toBe(`https://evil.test:${port}`);
    expect(seen.map((request) => request.host)).toEqual(['p01-caldav.icloud.com']);
    expect(seen.filter((request) => request.host === 'evil.test')).toEqual([]);
  });

  it('refuses a redirect down to http://p03-caldav.icloud.com', async () => {
    const fetchICloud = guarded();
    const next = encodeURIComponent(`http://p03-caldav.icloud.com:${port}/`);
    expect((await refusal(fetchICloud(`https://p01-caldav.icloud.com:${port}/to?next=${next}`))).detail).toBe(GUARD_REFUSALS.notHttps);
    expect(seen.map((request) => request.host)).toEqual(['p01-caldav.icloud.com']);
  });

  it('follows a chain of 5 redirects inside the pattern and refuses a 6th', async () => {
    const fetchICloud = guarded();
    const five = await fetchICloud(`https://p06-caldav.icloud.com:${port}/chain/${ICLOUD_MAX_REDIRECTS}`);
    expect(five.status).toBe(200);
    expect(seen).toHaveLength(ICLOUD_MAX_REDIRECTS + 1);
    expect(seen.every((request) => request.authorization === basic)).toBe(true);

    seen.length = 0;
    const error = await refusal(fetchICloud(`https://p07-caldav.icloud.com:${port}/chain/${ICLOUD_MAX_REDIRECTS + 1}`));
    expect(error.detail).toBe(GUARD_REFUSALS.tooManyRedirects);
    // The first request and five followed hops; the sixth hop is never sent.
    expect(seen).toHaveLength(ICLOUD_MAX_REDIRECTS + 1);
  });

  it('drops an Authorization the caller set, so only the guard attaches a credential', async () => {
    const fetchICloud = guarded();
    await fetchICloud(`https://p01-caldav.icloud.com:${port}/`, { headers: { authorization: 'Bearer smuggled' } });
    expect(seen[0]?.authorization).toBe(basic);
  });

  it.each([
    ['https://caldav.icloud.com/', undefined],
    ['https://P01-CALDAV.ICLOUD.COM/', undefined],
    ['https://p01-caldav.icloud.com./', undefined],
    ['https://icloud.com/', GUARD_REFUSALS.outsidePattern],
    ['https://evilicloud.com/', GUARD_REFUSALS.outsidePattern],
    ['https://p01.icloud.com.evil.test/', GUARD_REFUSALS.outsidePattern],
    ['https://icloud.com.evil.test/', GUARD_REFUSALS.outsidePattern],
    ['https://person:pw@p01-caldav.icloud.com/', GUARD_REFUSALS.userinfo],
    ['https://person@p01-caldav.icloud.com/', GUARD_REFUSALS.userinfo],
    ['https://17.248.1.1/', GUARD_REFUSALS.ipLiteral],
    ['https://[::1]/', GUARD_REFUSALS.ipLiteral],
    ['http://caldav.icloud.com/', GUARD_REFUSALS.notHttps],
    ['wss://caldav.icloud.com/', GUARD_REFUSALS.notHttps],
  ])('checks %s', (address, problem) => {
    expect(icloudAddressProblem(new URL(address))).toBe(problem);
  });
});

describe('the IMAP pin (design §7.5)', () => {
  let imapServer: ReturnType<typeof createTlsServer>;
  let imapPort: number;
  const connections: TLSSocket[] = [];
  const received: string[] = [];

  beforeAll(async () => {
    imapServer = createTlsServer({ cert: certs.cert, key: certs.key }, (socket) => {
      connections.push(socket);
      socket.on('data', (chunk: Buffer) => received.push(chunk.toString('utf8')));
      socket.write('* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] ready\r\n');
    });
    await new Promise<void>((resolve) => imapServer.listen(0, '127.0.0.1', resolve));
    imapPort = (imapServer.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const socket of connections) socket.destroy();
    await new Promise<void>((resolve) => imapServer.close(() => resolve()));
  });

  it.each([
    ['imap.evil.test', 993, true, IMAP_PIN_REFUSALS.otherHost],
    ['imap.mail.me.com.evil.test', 993, true, IMAP_PIN_REFUSALS.otherHost],
    ['p01-caldav.icloud.com', 993, true, IMAP_PIN_REFUSALS.otherHost],
    [ICLOUD_IMAP_HOST, 143, false, IMAP_PIN_REFUSALS.otherPort],
    [ICLOUD_IMAP_HOST, 993, false, IMAP_PIN_REFUSALS.cleartext],
  ])('an IMAP connection to any host but imap.mail.me.com:993 over TLS is refused before the password is sent (%s:%d)', async (host, port, secure, reason) => {
    const dialer = loopbackDialer(imapPort);
    const before = connections.length;
    const client = new ImapFlow({
      host,
      port,
      secure,
      auth: { user: credentials.appleId, pass: credentials.appPassword },
      transport: createPinnedImapTransport({ dial: dialer.dial, ca: certs.ca }),
      logger: false,
    });
    const error: unknown = await client.connect().then(() => undefined, (failure: unknown) => failure);
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect((error as OutboundRefusedError).detail).toBe(reason);
    expect(dialer.dialed).toEqual([]);
    expect(connections.length).toBe(before);
    expect(received.join('')).not.toContain(credentials.appPassword);
  });

  it('connects to imap.mail.me.com:993 with the certificate verified for that name', async () => {
    const dialer = loopbackDialer(imapPort);
    const socket = createPinnedImapTransport({ dial: dialer.dial, ca: certs.ca }).connect({ host: ICLOUD_IMAP_HOST, port: 993, secure: true }, () => undefined) as TLSSocket;
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    expect(socket.authorized).toBe(true);
    expect(dialer.dialed).toEqual([{ host: ICLOUD_IMAP_HOST, port: 993 }]);
    socket.destroy();
  });

  it('refuses a server whose certificate is not trusted (verification is never off)', async () => {
    const dialer = loopbackDialer(imapPort);
    const other = createTestCertificates(['unrelated.test']);
    try {
      const socket = createPinnedImapTransport({ dial: dialer.dial, ca: other.ca }).connect({ host: ICLOUD_IMAP_HOST, port: 993, secure: true }, () => undefined);
      const error = await new Promise<Error>((resolve) => socket.once('error', resolve));
      expect(error.message).toMatch(/certificate/i);
      socket.destroy();
    } finally {
      other.dispose();
    }
  });
});
