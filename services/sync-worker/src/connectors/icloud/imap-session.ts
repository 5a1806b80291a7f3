import { ImapFlow } from 'imapflow';
import type { ICloudCredentials } from '@pcg/shared/providers';
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

/** The user names iCloud may expect (reference §8.6): the Apple ID as given, then its local part. */
export function imapUserNames(appleId: string): string[] {
  const local = appleId.split('@')[0] ?? '';
  return local !== '' && local !== appleId ? [appleId, local] : [appleId];
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
 * A refused login tries the Apple ID's local part once (Apple documents both forms); a refusal of both
 * means the app-specific password is wrong or revoked. Aborting the signal closes the connection.
 */
export async function openImapSession(options: ImapSessionOptions): Promise<ImapFlow> {
  const names = imapUserNames(options.credentials.appleId);
  for (const [index, user] of names.entries()) {
    const imap = client(options, user);
    imap.on('error', () => undefined);
    const onAbort = () => imap.close();
    options.signal.addEventListener('abort', onAbort, { once: true });
    imap.once('close', () => options.signal.removeEventListener('abort', onAbort));
    try {
      await imap.connect();
      return imap;
    } catch (error) {
      imap.close();
      if (error instanceof OutboundRefusedError) throw error;
      if (isAuthFailure(error)) {
        if (index < names.length - 1) continue;
        throw new SourceAuthError('iCloud Mail refused the Apple ID and app-specific password; enter a new app-specific password');
      }
      const said = (error as { responseText?: unknown }).responseText;
      throw new SourceUnavailableError(`iCloud Mail could not be reached: ${typeof said === 'string' ? said : (error as Error).message}`);
    }
  }
  throw new SourceAuthError('iCloud Mail refused the Apple ID and app-specific password');
}
