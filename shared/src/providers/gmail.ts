import type { Sector } from '../sectors/index.ts';
import { GOOGLE_AUTHORIZE_URL, GOOGLE_IDENTITY_SCOPES, GOOGLE_OFFLINE_PARAMS, GOOGLE_TOKEN_URL, GOOGLE_USERINFO_URL } from './google.ts';
import type { ProviderDescriptor } from './provider-types.ts';

export const GMAIL_API_BASE = 'https://gmail.googleapis.com/gmail/v1';
/** Labels and headers only: Google refuses bodies (`format=full|raw`) and search (`q`) to it (reference §5.2). */
export const GMAIL_METADATA_SCOPE = 'https://www.googleapis.com/auth/gmail.metadata';

/**
 * Gmail (reference §5): message envelopes through a sign-in of its own at Google's OAuth server, asking
 * for `gmail.metadata` and `openid email` (the account's `sub`, as for Calendar and Contacts) only. A
 * consent that unticks the mail scope gives no connection (spec 2.5).
 */
export const GMAIL: ProviderDescriptor = {
  kind: 'gmail',
  displayName: 'Gmail',
  sectors: ['mail'],
  objects: ['mail.message'],
  signIn: 'oauth',
  defaultSyncIntervalMinutes: 15,
  oauth: {
    authorizeUrl: GOOGLE_AUTHORIZE_URL,
    tokenUrl: GOOGLE_TOKEN_URL,
    scopes: [...GOOGLE_IDENTITY_SCOPES, GMAIL_METADATA_SCOPE],
    pkce: true,
    authorizeParams: GOOGLE_OFFLINE_PARAMS,
    sectorsOf: (granted): Sector[] => (granted.includes(GMAIL_METADATA_SCOPE) ? ['mail'] : []),
    account: { url: GOOGLE_USERINFO_URL, field: 'sub' },
  },
};
