import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { ImapFlow } from 'imapflow';
import { startICloudImap, UntaggedEnabledFilter, type ICloudImapServer, type TestCertificates } from '@pcg/testkit/doubles';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ICLOUD_IMAP_HOST } from '../../src/connectors/icloud/icloud-imap-pin.ts';
import { trustAdvertisedCondstore } from '../../src/connectors/icloud/imap-session.ts';
import { ACCOUNT, icloudCertificates } from './icloud-setup.ts';

const filtered = (chunks: string[]) => text(Readable.from(chunks.map((chunk) => Buffer.from(chunk, 'latin1'))).pipe(new UntaggedEnabledFilter()));

describe('the iCloud IMAP double: ENABLE answered as iCloud does', () => {
  it('drops the untagged ENABLED response, even split across reads, and nothing else', async () => {
    expect(await filtered(['* OK ready\r\n', 'a1 OK done\r\n* ENAB', 'LED CONDSTORE UTF8=ACCEPT\r\n', 'a2 OK ENABLE completed\r\n'])).toBe('* OK ready\r\na1 OK done\r\na2 OK ENABLE completed\r\n');
    expect(await filtered(['* ENABLED\r\n', 'a3 OK\r\n'])).toBe('a3 OK\r\n');
  });

  it('answers CAPABILITY as iCloud does: no extension in the greeting, no CAPABILITY code on the login\'s OK, CONDSTORE only when asked after login', async () => {
    const session = await filtered([
      '* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ AUTH=PLAIN AUTH=LOGIN] Dovecot ready.\r\n',
      '* CAPABILITY IMAP4rev1 ID ENABLE CONDSTORE QRESYNC\r\n',
      'a1 OK Pre-login capabilities listed.\r\n',
      'a2 OK [CAPABILITY IMAP4rev1 SASL-IR CONDSTORE QRESYNC ENABLE] Logged in\r\n',
      '* CAPABILITY IMAP4rev1 ID ENABLE CONDSTORE QRESYNC MOVE\r\n',
      'a3 OK Capability completed.\r\n',
    ]);
    const lines = session.split('\r\n');
    // nextcloud/mail issue 3401, a session with imap.mail.me.com (the lists' literals, not the double's constants).
    expect(lines[0]).toBe('* OK [CAPABILITY XAPPLEPUSHSERVICE IMAP4 IMAP4rev1 SASL-IR AUTH=ATOKEN AUTH=PLAIN] Dovecot ready.');
    expect(lines[1]).toBe('* CAPABILITY XAPPLEPUSHSERVICE IMAP4 IMAP4rev1 SASL-IR AUTH=ATOKEN AUTH=PLAIN');
    expect(lines[3]).toBe('a2 OK Logged in');
    expect(lines[4]?.split(' ')).toEqual(expect.arrayContaining(['XAPPLEPUSHSERVICE', 'CONDSTORE', 'ENABLE', 'QRESYNC']));
    expect(lines[4]?.split(' ')).not.toContain('MOVE');
  });

  it('passes a literal untouched, even one whose text reads like an ENABLED response', async () => {
    const literal = '* ENABLED CONDSTORE\r\n';
    const fetch = `* 1 FETCH (UID 7 ENVELOPE (NIL {${literal.length}}\r\n${literal} NIL))\r\n`;
    expect(await filtered([fetch.slice(0, 30), fetch.slice(30), 'a4 OK\r\n'])).toBe(`${fetch}a4 OK\r\n`);
  });
});

describe('Dovecot behind the quirk proxy', { tags: ['needs-dovecot'] }, () => {
  let certs: TestCertificates;
  let server: ICloudImapServer;
  beforeAll(async () => {
    certs = icloudCertificates();
    server = await startICloudImap(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
  });
  afterAll(async () => {
    await server?.stop();
    certs?.dispose();
  });

  it('advertises CONDSTORE and answers HIGHESTMODSEQ, but imapflow does not count CONDSTORE enabled until the connector trusts the CAPABILITY', async () => {
    const imap = new ImapFlow({ host: '127.0.0.1', port: server.port, secure: true, servername: ICLOUD_IMAP_HOST, tls: { ca: certs.ca, servername: ICLOUD_IMAP_HOST }, auth: { user: ACCOUNT.appleId, pass: ACCOUNT.appPassword }, logger: false, disableAutoIdle: true });
    imap.on('error', () => undefined);
    await imap.connect();
    try {
      // The greeting offered no CONDSTORE: imapflow learned of it by asking again after login, as with iCloud.
      expect(imap.capabilities.has('XAPPLEPUSHSERVICE')).toBe(true);
      expect(imap.capabilities.has('CONDSTORE')).toBe(true);
      expect(imap.enabled.has('CONDSTORE')).toBe(false);
      const box = await imap.mailboxOpen('INBOX', { readOnly: true });
      expect(box.highestModseq).toBeTypeOf('bigint');
      trustAdvertisedCondstore(imap);
      expect(imap.enabled.has('CONDSTORE')).toBe(true);
    } finally {
      await imap.logout().catch(() => imap.close());
    }
  });
});
