import { ImapFlow } from 'imapflow';
import { isICloudMailAddress, type ICloudCredentials } from '@pcg/shared/providers';
import { SourceAuthError, SourceUnavailableError } from '../kit/source-errors.ts';
import { OutboundRefusedError } from './icloud-guard.ts';
import { createPinnedImapTransport, ICLOUD_IMAP_HOST, ICLOUD_IMAP_PORT, type PinnedImapOptions } from './icloud-imap-pin.ts';

export type ImapSessionOptions = {
  credentials: ICloudCredentials;
  pin: PinnedImapOptions;
  timeoutMs: number;
  signal: AbortSignal;
};

/** A refused login; `[UNAVAILABLE]` (RFC 5530) is the server failing to check it, which is worth a retry. */
function isAuthFailure(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const failure = error as { authenticationFailed?: unknown; serverResponseCode?: unknown };
  return failure.authenticationFailed === true && failure.serverResponseCode !== 'UNAVAILABLE';
}

/**
 * The user names to try. The iCloud Mail address, when the operator gave it, is the login and the only one
 * tried. Else the Apple ID as given, then its local part (reference §8.6, both forms reported to work).
 */
export function imapUserNames(credentials: Pick<ICloudCredentials, 'appleId' | 'mailAddress'>): string[] {
  if (credentials.mailAddress !== undefined) return [credentials.mailAddress];
  const { appleId } = credentials;
  const local = appleId.split('@')[0] ?? '';
  return local !== '' && local !== appleId ? [appleId, local] : [appleId];
}

/**
 * What to fix when every name was refused. iCloud Mail refuses an Apple ID at another domain and wants the
 * account's own @icloud.com address, while CalDAV and CardDAV take that Apple ID with the same app-specific
 * password (third-party reports: s-morgan-jeffries/apple-mail-fast-mcp issues 299 and 341): then the missing
 * mail address is the likelier fault than the password.
 */
export function refusedLoginMessage(credentials: Pick<ICloudCredentials, 'appleId' | 'mailAddress'>): string {
  if (credentials.mailAddress !== undefined) {
    return `iCloud Mail refused the iCloud Mail address ${credentials.mailAddress} with this app-specific password; check the address, or enter a new app-specific password`;
  }
  if (!isICloudMailAddress(credentials.appleId)) {
    return `iCloud Mail refused the Apple ID ${credentials.appleId}: iCloud Mail logs in with your iCloud Mail address (…@icloud.com, @me.com or @mac.com), not an Apple ID at another domain; enter your iCloud Mail address with the credentials`;
  }
  return 'iCloud Mail refused the Apple ID and app-specific password; enter a new app-specific password';
}

/**
 * iCloud answers `ENABLE CONDSTORE` with a bare tagged OK and no untagged `ENABLED` line, although CONDSTORE
 * is then on (nextcloud/mail issue 3401's session log; lswith/imap-mcp issue 8). imapflow counts an extension
 * as enabled only from that line (`commands/enable.js`), and without it silently leaves CHANGEDSINCE out of
 * every FETCH, so each sync would read whole mailboxes again. A server that lists CONDSTORE (or QRESYNC) in
 * its CAPABILITY after login (imapflow asks again then) takes CHANGEDSINCE whatever ENABLE said: a FETCH
 * with it is itself a CONDSTORE enabling command (RFC 7162 §3.1).
 */
export function trustAdvertisedCondstore(imap: Pick<ImapFlow, 'capabilities' | 'enabled'>): void {
  if (imap.capabilities.has('CONDSTORE') || imap.capabilities.has('QRESYNC')) imap.enabled.add('CONDSTORE');
}

function client(options: ImapSessionOptions, user: string): ImapFlow {
  return new ImapFlow({
    host: ICLOUD_IMAP_HOST,
    port: ICLOUD_IMAP_PORT,
    secure: true,
    transport: createPinnedImapTransport(options.pin),
    auth: { user, pass: options.credentials.appPassword },
    logger: false,
    disableAutoIdle: true,
    disableCompression: true,
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: Math.max(options.timeoutMs, 30_000),
  });
}

/**
 * A logged-in IMAP session with iCloud, only ever through the pin (imap.mail.me.com:993, verified TLS).
 * Without an iCloud Mail address, a refused login tries the Apple ID's local part once; a refusal of every
 * name is a sign-in to repair, with what to fix (`refusedLoginMessage`). Aborting the signal closes the connection.
 */
export async function openImapSession(options: ImapSessionOptions): Promise<ImapFlow> {
  const names = imapUserNames(options.credentials);
  for (const [index, user] of names.entries()) {
    const imap = client(options, user);
    imap.on('error', () => undefined);
    const onAbort = () => imap.close();
    options.signal.addEventListener('abort', onAbort, { once: true });
    imap.once('close', () => options.signal.removeEventListener('abort', onAbort));
    try {
      await imap.connect();
      trustAdvertisedCondstore(imap);
      return imap;
    } catch (error) {
      imap.close();
      if (error instanceof OutboundRefusedError) throw error;
      if (isAuthFailure(error)) {
        if (index < names.length - 1) continue;
        throw new SourceAuthError(refusedLoginMessage(options.credentials));
      }
      const said = (error as { responseText?: unknown }).responseText;
      throw new SourceUnavailableError(`iCloud Mail could not be reached: ${typeof said === 'string' ? said : (error as Error).message}`);
    }
  }
  throw new SourceAuthError(refusedLoginMessage(options.credentials));
}
