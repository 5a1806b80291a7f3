import type { Sector } from '../sectors/index.ts';
import type { ProviderDescriptor } from './provider-types.ts';

/** Google's sign-in origins (reference §5.1); `GOOGLE_BASE_URL` replaces them and the API origins below. */
export const GOOGLE_AUTHORIZE_URL = 'https://accounts.google.com/o/oauth2/v2/auth';
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** OpenID Connect's userinfo: `sub` is the stable id of the Google account, whatever scopes were granted. */
export const GOOGLE_USERINFO_URL = 'https://www.googleapis.com/oauth2/v3/userinfo';
export const GOOGLE_CALENDAR_API_BASE = 'https://www.googleapis.com/calendar/v3';
export const GOOGLE_PEOPLE_API_BASE = 'https://people.googleapis.com/v1';

export const GOOGLE_CALENDAR_SCOPE = 'https://www.googleapis.com/auth/calendar.readonly';
export const GOOGLE_CONTACTS_SCOPE = 'https://www.googleapis.com/auth/contacts.readonly';
/** Name the account only (`sub`, and the address Google reports for it); they read no calendar, contact or mail. */
export const GOOGLE_IDENTITY_SCOPES = ['openid', 'email'] as const;

/** Google always asks for a refresh token this way; it never rotates it (reference §5.1). */
export const GOOGLE_OFFLINE_PARAMS = { access_type: 'offline', prompt: 'consent' } as const;

/**
 * Google Calendar and Contacts (reference §7) from one sign-in: spec 2.5 gives one connection per sector
 * the granted scopes cover, `calendar` for `calendar.readonly` and `contacts` for `contacts.readonly`,
 * so a consent that unticks one box gives the other alone.
 */
export const GOOGLE: ProviderDescriptor = {
  kind: 'google',
  displayName: 'Google Calendar and Contacts',
  sectors: ['calendar', 'contacts'],
  objects: ['calendar.event', 'contacts.contact'],
  signIn: 'oauth',
  defaultSyncIntervalMinutes: 30,
  oauth: {
    authorizeUrl: GOOGLE_AUTHORIZE_URL,
    tokenUrl: GOOGLE_TOKEN_URL,
    scopes: [...GOOGLE_IDENTITY_SCOPES, GOOGLE_CALENDAR_SCOPE, GOOGLE_CONTACTS_SCOPE],
    pkce: true,
    authorizeParams: GOOGLE_OFFLINE_PARAMS,
    sectorsOf: (granted): Sector[] => [
      ...(granted.includes(GOOGLE_CALENDAR_SCOPE) ? (['calendar'] as const) : []),
      ...(granted.includes(GOOGLE_CONTACTS_SCOPE) ? (['contacts'] as const) : []),
    ],
    account: { url: GOOGLE_USERINFO_URL, field: 'sub' },
  },
};
