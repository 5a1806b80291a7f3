import type { Sector } from '../sectors/index.ts';
import type { ProviderDescriptor } from './provider-types.ts';

/**
 * The scopes spec 2.5 names for the Microsoft-style provider, asked for in one sign-in, and `openid` and
 * `profile`: the ID token they bring names the account (`oid`, which "the `profile` scope is required to
 * receive"), since GET /me needs `User.Read`. A departure from the spec's "exactly" that adds no Graph
 * data; docs/decisions.md says why.
 */
export const MICROSOFT_SCOPES = ['Mail.Read', 'Calendars.Read', 'Contacts.Read', 'offline_access', 'openid', 'profile'] as const;

/** Which granted scope covers which sector; `offline_access` covers none (it only brings a refresh token). */
const SCOPE_SECTORS: ReadonlyArray<readonly [scope: string, sector: Sector]> = [
  ['mail.read', 'mail'],
  ['calendars.read', 'calendar'],
  ['contacts.read', 'contacts'],
];

/**
 * The sectors a granted scope list covers. The token answer's `scope` names the scopes as granted: short
 * names, possibly prefixed with the Graph resource (reference §6.1, "strip that prefix"), compared
 * without case as the identity platform does; `offline_access` is never echoed and is not needed here.
 */
export function microsoftSectorsOf(granted: readonly string[]): Sector[] {
  const names = new Set(granted.map((scope) => scope.replace(/^https:\/\/graph\.microsoft\.com\//i, '').toLowerCase()));
  return SCOPE_SECTORS.filter(([scope]) => names.has(scope)).map(([, sector]) => sector);
}

/** The identity platform's `common` tenant (reference §6.1); `MICROSOFT_LOGIN_BASE_URL` replaces its origin. */
export const MICROSOFT_LOGIN_BASE = 'https://login.microsoftonline.com/common';
/** Graph's v1.0 API, where the connector reads; `MICROSOFT_GRAPH_BASE_URL` replaces its origin. */
export const MICROSOFT_GRAPH_API_BASE = 'https://graph.microsoft.com/v1.0';

/** Microsoft mail, calendar and contacts through one sign-in at the identity platform (reference §6). */
export const MICROSOFT: ProviderDescriptor = {
  kind: 'microsoft',
  displayName: 'Microsoft (Outlook mail, calendar, contacts)',
  sectors: ['mail', 'calendar', 'contacts'],
  objects: ['mail.message', 'calendar.event', 'contacts.contact'],
  signIn: 'oauth',
  defaultSyncIntervalMinutes: 15,
  oauth: {
    authorizeUrl: `${MICROSOFT_LOGIN_BASE}/oauth2/v2.0/authorize`,
    tokenUrl: `${MICROSOFT_LOGIN_BASE}/oauth2/v2.0/token`,
    scopes: MICROSOFT_SCOPES,
    pkce: true,
    // The v2 token endpoint takes the scopes again on a refresh, and may answer with fewer.
    scopeOnRefresh: true,
    sectorsOf: microsoftSectorsOf,
    // ID token claims reference: `oid` is the account's immutable id in its tenant, "the `id` property"
    // Graph returns for the user; `preferred_username` is a name to show, never an identity.
    account: { idToken: { id: 'oid', name: 'preferred_username' } },
  },
};
