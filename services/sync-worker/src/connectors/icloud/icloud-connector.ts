import { ICLOUD, ICloudCredentialsSchema, type ICloudCredentials } from '@pcg/shared/providers';
import type { Connector, ConnectorContext, SyncOutcome } from '../connector-types.ts';
import type { CalendarWindow } from '../kit/calendar-window.ts';
import { SourceAuthError, SourceRejectedError } from '../kit/source-errors.ts';
import { syncCalendar } from './calendar-sync.ts';
import { syncContacts } from './contacts-sync.ts';
import { createGuardedFetch } from './icloud-guard.ts';
import type { PinnedImapOptions } from './icloud-imap-pin.ts';
import { openImapSession } from './imap-session.ts';
import { syncMail } from './mail-sync.ts';
import { createWebDav } from './webdav-client.ts';

export const ICLOUD_CALDAV_URL = 'https://caldav.icloud.com';
export const ICLOUD_CARDDAV_URL = 'https://contacts.icloud.com';

export type ICloudConnectorOptions = {
  /** CalDAV entry address; default https://caldav.icloud.com. Still checked by the guard, like every address. */
  caldavUrl?: string;
  /** CardDAV entry address; default https://contacts.icloud.com. Still checked by the guard. */
  carddavUrl?: string;
  /** What carries a request the guard has checked; default the global fetch (tests: a test CA and resolver). */
  transport?: typeof fetch;
  /** The IMAP pin's dialer and CA; default a TCP connection and the system's CAs. */
  imap?: PinnedImapOptions;
  /** The calendar sync window (`CALENDAR_PAST_DAYS`, `CALENDAR_FUTURE_DAYS`); default 90 and 365 days. */
  window?: CalendarWindow;
};

function credentialsOf(context: ConnectorContext): ICloudCredentials {
  const parsed = ICloudCredentialsSchema.safeParse(context.credentials);
  if (!parsed.success) throw new SourceAuthError('the stored iCloud credentials are incomplete; enter them again');
  return parsed.data;
}

/**
 * Apple iCloud (reference §8): one sign-in (an Apple ID and an app-specific password) behind three
 * connections. Every HTTP request goes through the outbound guard; IMAP through the pin.
 */
export function createICloudConnector(options: ICloudConnectorOptions = {}): Connector {
  function webDav(context: ConnectorContext) {
    const guardedFetch = createGuardedFetch({ credentials: credentialsOf(context), transport: options.transport });
    return createWebDav({ guardedFetch, timeoutMs: context.requestTimeoutMs, signal: context.signal });
  }

  return {
    provider: ICLOUD,
    actions: [],
    async sync(context): Promise<SyncOutcome> {
      switch (context.connection.sector) {
        case 'calendar':
          return syncCalendar(context, webDav(context), new URL(options.caldavUrl ?? ICLOUD_CALDAV_URL), options.window);
        case 'contacts':
          return syncContacts(context, webDav(context), new URL(options.carddavUrl ?? ICLOUD_CARDDAV_URL));
        case 'mail': {
          const credentials = credentialsOf(context);
          const session = () => openImapSession({ credentials, pin: options.imap ?? {}, timeoutMs: context.requestTimeoutMs, signal: context.signal });
          return syncMail(context, session, credentials.mailAddress ?? credentials.appleId);
        }
        default:
          throw new SourceRejectedError(`iCloud ${context.connection.sector} is not read yet`, 0, 'not read yet');
      }
    },
  };
}

export const icloudConnector = createICloudConnector();
