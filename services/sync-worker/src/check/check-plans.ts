import {
  GMAIL,
  GMAIL_API_BASE,
  GOOGLE,
  GOOGLE_CALENDAR_API_BASE,
  GOOGLE_PEOPLE_API_BASE,
  HomeAssistantCredentialsSchema,
  ICloudCredentialsSchema,
  MICROSOFT,
  MICROSOFT_GRAPH_API_BASE,
  PLAID,
  PlaidItemCredentialsSchema,
  SimplefinAccessSchema,
  WHOOP_API_BASE,
  WHOOP_HEALTH_SCOPES,
  type RebaseUrl,
} from '@pcg/shared/providers';
import type { ConnectionInfo } from '../connectors/connector-types.ts';
import { ICLOUD_CALDAV_URL, ICLOUD_CARDDAV_URL, type ICloudConnectorOptions } from '../connectors/icloud/icloud-connector.ts';
import { icloudClassifier } from '../connectors/icloud/icloud-classifier.ts';
import { createGuardedFetch, ICLOUD_MAX_REDIRECTS } from '../connectors/icloud/icloud-guard.ts';
import { openImapSession } from '../connectors/icloud/imap-session.ts';
import { createWebDav } from '../connectors/icloud/webdav-client.ts';
import type { CheckProbe } from './check-probe.ts';
import { defaultClassifier } from '../connectors/kit/classifiers.ts';
import type { SourceBody } from '../connectors/kit/source-client.ts';
import type { SourceClassifier } from '../connectors/kit/source-verdict.ts';
import { homeAssistantClassifier } from '../connectors/home-assistant/home-assistant-classifier.ts';
import { graphClassifier } from '../connectors/microsoft/graph-client.ts';
import type { PlaidApp } from '../connectors/plaid/plaid-api.ts';
import { plaidClassifier } from '../connectors/plaid/plaid-classifier.ts';
import { simplefinClassifier } from '../connectors/simplefin/simplefin-classifier.ts';
import { whoopClassifier } from '../connectors/whoop/whoop-classifier.ts';

/** One minimal read of an endpoint the connector uses. */
export type CheckEndpoint = {
  step: string;
  title: string;
  url: string;
  method?: 'GET' | 'POST';
  body?: SourceBody;
  auth: Record<string, string>;
  headers?: Record<string, string>;
  /** The scope this read needs; absent when the source has none. */
  scope?: string;
  /** The permission as the provider's consent screen words it ("calendar"). */
  permission?: string;
  /** This read is the credential step: run alone before a token connection is saved. */
  credential?: boolean;
  /** A read that is not one HTTP request through the plan's client (iCloud's WebDAV through its guard, IMAP): it counts its own requests on the probe. */
  read?: (probe: CheckProbe, timeoutMs: number) => Promise<void>;
};

/** The stored credentials did not parse: only entering them again (or a new sign-in) helps. */
export class CheckCredentialsError extends Error {}

/**
 * How a provider's connection is checked: the source's name in messages, the connector's own
 * classifier, the fix when the source refuses the credential, and the reads (built from the current
 * credentials, so a refreshed token is used). Only reads the connector itself makes, never a billed one.
 */
export type CheckPlan = {
  /** How the source is named in messages ("the hub"). */
  what: string;
  /** The provider as the person knows it ("Microsoft"), for "Microsoft did not grant …". */
  name: string;
  classifier: SourceClassifier;
  maxRedirects: number;
  /** OAuth: the token step runs, and a refused token is refreshed once. */
  oauth: boolean;
  /** The address is the operator's or the source's to give (the hub, the bridge): asked through the outbound policy. */
  givenAddress?: boolean;
  /** What to do when the outbound policy refuses that address (issue 32). */
  addressFix?: string;
  /** What carries the plan's requests instead of the global fetch (iCloud's local transport in the demo and tests). */
  transport?: typeof fetch;
  credentialFix: string;
  endpoints(credentials: unknown, connection: ConnectionInfo): Promise<CheckEndpoint[]>;
};

function parsed<T>(schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } }, value: unknown, fix: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new CheckCredentialsError(`the stored credentials are incomplete: ${fix}`);
  return result.data;
}

function bearer(credentials: unknown, fix: string): Record<string, string> {
  const token = (credentials as { accessToken?: unknown } | null)?.accessToken;
  if (typeof token !== 'string' || token === '') throw new CheckCredentialsError(`the stored sign-in holds no access token: ${fix}`);
  return { authorization: `Bearer ${token}` };
}

/** The scopes of a provider's list that cover a sector (spec 2.5's mapping, read through the descriptor). */
function sectorScopes(provider: typeof MICROSOFT, sector: string): string[] {
  return (provider.oauth?.scopes ?? []).filter((scope) => provider.oauth?.sectorsOf([scope]).includes(sector as never));
}

export type CheckPlanOptions = { rebaseUrl: RebaseUrl; loadPlaidApp: () => Promise<PlaidApp | null>; icloud?: ICloudConnectorOptions };

export function checkPlans({ rebaseUrl, loadPlaidApp, icloud = {} }: CheckPlanOptions): Record<string, CheckPlan> {
  const signInAgain = (name: string) => `sign in to ${name} again from the Console`;
  return {
    // Reference §9.2: `GET /api/` answers {"message":"API running."} to a valid token, 401 to any other.
    'home-assistant': {
      what: 'the hub',
      name: 'Home Assistant',
      classifier: homeAssistantClassifier,
      maxRedirects: 5,
      oauth: false,
      givenAddress: true,
      addressFix: "enter the hub's own address in the connection (its name or LAN address, as in http://homeassistant.local:8123)",
      credentialFix: 'create a new long-lived access token in your Home Assistant profile (Security tab) and enter it again',
      async endpoints(credentials) {
        const { baseUrl, token } = parsed(HomeAssistantCredentialsSchema, credentials, 'enter the hub address and token again');
        const auth = { authorization: `Bearer ${token}` };
        return [
          { step: 'credentials_accepted', title: 'The hub accepts the token', url: `${baseUrl}/api/`, auth, credential: true },
          { step: 'endpoint:config', title: 'The hub answers its configuration (/api/config)', url: `${baseUrl}/api/config`, auth },
          { step: 'endpoint:states', title: 'The hub answers its states (/api/states)', url: `${baseUrl}/api/states`, auth },
        ];
      },
    },
    // Reference §3.2: each collection takes `limit`; one record is the minimal read.
    whoop: {
      what: 'WHOOP',
      name: 'WHOOP',
      classifier: whoopClassifier,
      maxRedirects: 0,
      oauth: true,
      credentialFix: signInAgain('WHOOP'),
      async endpoints(credentials) {
        const auth = bearer(credentials, signInAgain('WHOOP'));
        const base = rebaseUrl(WHOOP_API_BASE);
        const paths: Record<(typeof WHOOP_HEALTH_SCOPES)[number], string> = { 'read:recovery': '/v2/recovery', 'read:sleep': '/v2/activity/sleep', 'read:workout': '/v2/activity/workout' };
        return WHOOP_HEALTH_SCOPES.map((scope) => {
          const permission = scope.slice('read:'.length);
          return { step: `endpoint:${permission}`, title: `WHOOP answers ${permission} (${paths[scope]})`, url: `${base}${paths[scope]}?limit=1`, auth, scope, permission };
        });
      },
    },
    // Reference §6.2: one item of the sector's own collection.
    microsoft: {
      what: 'Microsoft Graph',
      name: 'Microsoft',
      classifier: graphClassifier,
      maxRedirects: 0,
      oauth: true,
      credentialFix: signInAgain('Microsoft'),
      async endpoints(credentials, connection) {
        const auth = bearer(credentials, signInAgain('Microsoft'));
        const base = rebaseUrl(MICROSOFT_GRAPH_API_BASE);
        const paths: Record<string, string> = { calendar: '/me/calendars?$top=1', contacts: '/me/contacts?$top=1', mail: '/me/mailFolders?$top=1' };
        const path = paths[connection.sector];
        if (!path) return [];
        return sectorScopes(MICROSOFT, connection.sector).map((scope) => ({
          step: `endpoint:${connection.sector}`,
          title: `Microsoft answers the ${connection.sector} (${path.split('?')[0]})`,
          url: `${base}${path}`,
          auth,
          scope,
          permission: connection.sector,
        }));
      },
    },
    // Reference §7.1, §7.2: the calendar list and the person's connections, one item each.
    google: {
      what: 'Google',
      name: 'Google',
      classifier: defaultClassifier,
      maxRedirects: 0,
      oauth: true,
      credentialFix: signInAgain('Google'),
      async endpoints(credentials, connection) {
        const auth = bearer(credentials, signInAgain('Google'));
        const [scope] = sectorScopes(GOOGLE, connection.sector);
        if (connection.sector === 'calendar') {
          return [{ step: 'endpoint:calendar', title: 'Google Calendar answers the calendar list', url: `${rebaseUrl(GOOGLE_CALENDAR_API_BASE)}/users/me/calendarList?maxResults=1`, auth, scope, permission: 'calendar' }];
        }
        if (connection.sector === 'contacts') {
          const url = `${rebaseUrl(GOOGLE_PEOPLE_API_BASE)}/people/me/connections?personFields=names&pageSize=1`;
          return [{ step: 'endpoint:contacts', title: 'Google People answers the contacts', url, auth, scope, permission: 'contacts' }];
        }
        return [];
      },
    },
    // Reference §5.2: `users/me/profile` is the smallest read of the mailbox.
    gmail: {
      what: 'Gmail',
      name: 'Google',
      classifier: defaultClassifier,
      maxRedirects: 0,
      oauth: true,
      credentialFix: signInAgain('Gmail'),
      async endpoints(credentials, connection) {
        const auth = bearer(credentials, signInAgain('Gmail'));
        const [scope] = sectorScopes(GMAIL, connection.sector);
        return [{ step: 'endpoint:mail', title: 'Gmail answers the mailbox profile', url: `${rebaseUrl(GMAIL_API_BASE)}/users/me/profile`, auth, scope, permission: 'Gmail metadata' }];
      },
    },
    // Reference §1.3: `/item/get` and `/accounts/get` are free reads; `/accounts/balance/get` is billed and never asked.
    plaid: {
      what: 'the bank aggregator',
      name: 'Plaid',
      classifier: plaidClassifier,
      maxRedirects: 0,
      oauth: false,
      credentialFix: 'open the connection in the Console and link the bank again (update mode)',
      async endpoints(credentials) {
        const item = parsed(PlaidItemCredentialsSchema, credentials, 'link the bank again');
        const app = await loadPlaidApp();
        if (!app) throw new CheckCredentialsError("the aggregator's application is not saved: save its client ID and secret in Settings › Provider applications");
        const link = PLAID.link;
        if (!link) return [];
        const base = rebaseUrl(link.apiBaseUrls[app.environment]).replace(/\/+$/, '');
        const auth = { 'PLAID-CLIENT-ID': app.clientId, 'PLAID-SECRET': app.clientSecret };
        const body: SourceBody = { json: { access_token: item.accessToken } };
        const headers = { 'Plaid-Version': '2020-09-14' };
        return [
          { step: 'credentials_accepted', title: 'The aggregator accepts the item (/item/get)', url: `${base}/item/get`, method: 'POST', body, auth, headers, credential: true },
          { step: 'endpoint:accounts', title: 'The aggregator answers the accounts (/accounts/get)', url: `${base}/accounts/get`, method: 'POST', body, auth, headers },
        ];
      },
    },
    // Reference §8.3, §8.6: the discovery's first request (the signed-in principal) on CalDAV or CardDAV, through
    // the iCloud guard like every iCloud request; for mail, the IMAP login through the pin, then logout.
    icloud: {
      what: 'iCloud',
      name: 'Apple',
      classifier: icloudClassifier,
      maxRedirects: ICLOUD_MAX_REDIRECTS,
      oauth: false,
      transport: icloud.transport,
      credentialFix: 'create a new app-specific password at appleid.apple.com and enter it with your Apple ID',
      async endpoints(credentials, connection) {
        const account = parsed(ICloudCredentialsSchema, credentials, 'enter your Apple ID and an app-specific password again');
        const dav = (probe: CheckProbe, timeoutMs: number) =>
          createWebDav({ guardedFetch: createGuardedFetch({ credentials: account, transport: probe.fetch }), timeoutMs, signal: probe.signal });
        if (connection.sector === 'mail') {
          const read = async (probe: CheckProbe, timeoutMs: number) => {
            probe.countOne();
            const session = await openImapSession({ credentials: account, pin: icloud.imap ?? {}, timeoutMs, signal: probe.signal });
            await session.logout().catch(() => undefined);
          };
          return [{ step: 'endpoint:mail', title: 'iCloud Mail accepts the login (IMAP)', url: 'imap.mail.me.com', auth: {}, read }];
        }
        const entry = connection.sector === 'calendar' ? (icloud.caldavUrl ?? ICLOUD_CALDAV_URL) : connection.sector === 'contacts' ? (icloud.carddavUrl ?? ICLOUD_CARDDAV_URL) : undefined;
        if (!entry) return [];
        const kind = connection.sector === 'calendar' ? 'CalDAV' : 'CardDAV';
        const read = async (probe: CheckProbe, timeoutMs: number) => {
          await dav(probe, timeoutMs).propfind(new URL(entry), '0', '<d:current-user-principal/>');
        };
        return [{ step: `endpoint:${connection.sector}`, title: `iCloud answers ${kind} (the signed-in principal)`, url: entry, auth: {}, read }];
      },
    },
    // Reference §2.2, §2.4: one `balances-only` read; the bridge expects about 24 requests a day, so one only.
    simplefin: {
      what: 'the bridge',
      name: 'SimpleFIN',
      classifier: simplefinClassifier,
      maxRedirects: 5,
      oauth: false,
      givenAddress: true,
      addressFix: 'the bridge gave an address the gateway does not dial: create a new setup token at the bridge and claim it',
      credentialFix: 'the bridge no longer accepts this access: create a new setup token at the bridge and claim it',
      async endpoints(credentials) {
        const { accessUrl } = parsed(SimplefinAccessSchema, credentials, 'claim a new setup token');
        const url = new URL(accessUrl);
        // WHATWG fetch refuses user:pass in a URL (reference §2.1): a Basic header instead.
        const authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
        url.username = '';
        url.password = '';
        const target = `${url.toString().replace(/\/+$/, '')}/accounts?balances-only=1&version=2`;
        return [{ step: 'credentials_accepted', title: 'The bridge accepts the access (/accounts, balances only)', url: target, auth: { authorization }, credential: true }];
      },
    },
  };
}
