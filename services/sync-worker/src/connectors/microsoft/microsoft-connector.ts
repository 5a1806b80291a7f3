import { MICROSOFT, MICROSOFT_GRAPH_API_BASE } from '@pcg/shared/providers';
import type { Connector } from '../connector-types.ts';
import type { CalendarWindow } from '../kit/calendar-window.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import { syncCalendar } from './calendar-sync.ts';
import { syncContacts } from './contacts-sync.ts';
import { syncMail } from './mail-sync.ts';

export type MicrosoftConnectorOptions = {
  /** Graph's v1.0 address; default the real one (the sync-worker passes it through its origin rebaser). */
  apiBase?: string;
  /** The clock the calendar window is placed by; default `Date.now`. */
  now?: () => number;
  /** The calendar sync window (`CALENDAR_PAST_DAYS`, `CALENDAR_FUTURE_DAYS`); default 90 and 365 days. */
  window?: CalendarWindow;
};

/**
 * Microsoft Graph (reference §6): one sign-in, up to three connections (mail, calendar, contacts), each
 * synced through its own delta rounds. Read-only: no actions, no live reads.
 */
export function createMicrosoftConnector(options: MicrosoftConnectorOptions = {}): Connector {
  const now = options.now ?? Date.now;
  const apiBase = options.apiBase ?? MICROSOFT_GRAPH_API_BASE;
  return {
    provider: MICROSOFT,
    actions: [],
    async sync(context) {
      switch (context.connection.sector) {
        case 'calendar':
          return syncCalendar(context, now(), apiBase, options.window);
        case 'mail':
          return syncMail(context, apiBase);
        case 'contacts':
          return syncContacts(context, apiBase);
        default:
          throw new SourceRejectedError(`Microsoft Graph fills no '${context.connection.sector}' sector`, 0, 'unknown sector');
      }
    },
  };
}
