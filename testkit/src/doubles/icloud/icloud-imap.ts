import { startImapQuirkProxy } from './imap-quirk-proxy.ts';
import { startDovecot, type LocalServer } from './local-servers.ts';
import type { TestCertificates } from './test-ca.ts';

/** The name the IMAP pin verifies (the sync-worker's ICLOUD_IMAP_HOST; the testkit does not import runtime code). */
const ICLOUD_IMAP_NAME = 'imap.mail.me.com';

export type ICloudImapServer = LocalServer & {
  /** Dovecot's own port, for the owner's other mail client (the seeder); the connector dials `port`. */
  dovecotPort: number;
};

/**
 * iCloud Mail's IMAP for tests: a Dovecot whose only user is `user.name`, the account's iCloud Mail address, so
 * the Apple ID at another domain and its local part are refused as iCloud refuses them (third-party reports:
 * s-morgan-jeffries/apple-mail-fast-mcp issues 299 and 341), behind the quirk proxy that answers `ENABLE` as
 * iCloud does (`imap-quirk-proxy.ts`). The proxy is on unless `quirks: false`.
 */
export async function startICloudImap(certs: TestCertificates, user: { name: string; password: string }, options: { quirks?: boolean } = {}): Promise<ICloudImapServer> {
  const dovecot = await startDovecot(certs, user);
  if (options.quirks === false) return { ...dovecot, dovecotPort: dovecot.port };
  const proxy = await startImapQuirkProxy({ certs, upstreamPort: dovecot.port, servername: ICLOUD_IMAP_NAME }).catch(async (error: unknown) => {
    await dovecot.stop();
    throw error;
  });
  return {
    port: proxy.port,
    dir: dovecot.dir,
    dovecotPort: dovecot.port,
    async stop() {
      await proxy.close();
      await dovecot.stop();
    },
  };
}
