import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoopbackFetch, startRadicale, type LocalServer, type TestCertificates } from '@pcg/testkit/doubles';
import { ACCOUNT, icloudCertificates } from './icloud-setup.ts';

// Radicale as iCloud's CardDAV/CalDAV in tests answers a request without credentials with iCloud's challenge
// (reference §8.1: "iCloud's 401 challenge advertises WWW-Authenticate: X-MobileMe-AuthToken"), so the iCloud
// tests that read through this transport prove the connector sends Basic unasked.
describe('the iCloud DAV double', { tags: ['needs-radicale'] }, () => {
  let certs: TestCertificates;
  let radicale: LocalServer;
  let transport: ReturnType<typeof createLoopbackFetch>;
  beforeAll(async () => {
    certs = icloudCertificates();
    radicale = await startRadicale(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    transport = createLoopbackFetch(certs.ca);
  });
  afterAll(async () => {
    await transport?.close();
    await radicale?.stop();
    certs?.dispose();
  });

  it('challenges a request without credentials with X-MobileMe-AuthToken, not Basic, and takes Basic credentials sent unasked', async () => {
    const url = `https://contacts.icloud.com:${radicale.port}/${ACCOUNT.appleId}/`;
    const refused = await transport.fetch(url, { method: 'PROPFIND', headers: { depth: '0' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^X-MobileMe-AuthToken\b/);
    expect(refused.headers.get('www-authenticate')).not.toMatch(/Basic/i);
    const basic = `Basic ${Buffer.from(`${ACCOUNT.appleId}:${ACCOUNT.appPassword}`).toString('base64')}`;
    const answered = await transport.fetch(url, { method: 'PROPFIND', headers: { depth: '0', authorization: basic } });
    expect(answered.status).toBe(207);
  });
});
