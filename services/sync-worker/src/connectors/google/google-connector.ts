import { GOOGLE, GOOGLE_CALENDAR_API_BASE, GOOGLE_PEOPLE_API_BASE } from '@pcg/shared/providers';
import type { Connector } from '../connector-types.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import { DEFAULT_CALENDAR_WINDOW, syncCalendar, type CalendarWindow } from './calendar-sync.ts';
import { syncContacts } from './people-sync.ts';

export type GoogleConnectorOptions = { calendarBase?: string; peopleBase?: string; window?: CalendarWindow };

/** Google Calendar and Contacts: one sign-in, one connection per sector, each synced on its own. */
export function createGoogleConnector(options: GoogleConnectorOptions = {}): Connector {
  const calendarBase = options.calendarBase ?? GOOGLE_CALENDAR_API_BASE;
  const peopleBase = options.peopleBase ?? GOOGLE_PEOPLE_API_BASE;
  return {
    provider: GOOGLE,
    actions: [],
    async sync(context) {
      if (context.connection.sector === 'calendar') return syncCalendar(context, calendarBase, options.window ?? DEFAULT_CALENDAR_WINDOW);
      if (context.connection.sector === 'contacts') return syncContacts(context, peopleBase);
      throw new SourceRejectedError(`Google has no '${context.connection.sector}' connection`, 0, 'unknown sector');
    },
  };
}
