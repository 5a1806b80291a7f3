import { MICROSOFT } from '@pcg/shared/providers';
import type { Connector } from '../connector-types.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import { syncCalendar } from './calendar-sync.ts';
import { syncContacts } from './contacts-sync.ts';
import { syncMail } from './mail-sync.ts';

export type MicrosoftConnectorOptions = {
  /** The clock the calendar window is placed by; default `Date.now`. */
  now?: () => number;
};

/**
 * Microsoft Graph (reference §6): one sign-in, up to three connections (mail, calendar, contacts), each
 * synced through its own delta rounds. Read-only: no actions, no live reads.
 */
export function createMicrosoftConnector(options: MicrosoftConnectorOptions = {}): Connector {
  const now = options.now ?? Date.now;
  return {
    provider: MICROSOFT,
    actions: [],
    async sync(context) {
      switch (context.connection.sector) {
        case 'calendar':
          return syncCalendar(context, now());
        case 'mail':
          return syncMail(context);
        case 'contacts':
          return syncContacts(context);
        default:
          throw new SourceRejectedError(`Microsoft Graph fills no '${context.connection.sector}' sector`, 0, 'unknown sector');
      }
    },
  };
}

export const microsoftConnector = createMicrosoftConnector();
