import { randomUUID } from 'node:crypto';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sealCredentials } from '@pcg/shared/crypto';
import type { DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import type { ProviderDescriptor } from '@pcg/shared/providers';
import { createSignInQueries, providerAppContext } from '@pcg/shared/sign-ins';
import type { Connector } from '../../services/sync-worker/src/connectors/connector-types.ts';
import { SourceUnavailableError } from '../../services/sync-worker/src/connectors/kit/source-errors.ts';
import type { OAuthCredentials } from '../../services/sync-worker/src/sign-ins/oauth-client.ts';
import { createTokenRefresher } from '../../services/sync-worker/src/sign-ins/token-refresh.ts';
import type { OAuthProviderDouble } from './oauth-provider-double.ts';

/** Spec 2.5's Microsoft-style rule, on a test provider kind registered only in a test's own processes. */
export const TEST_OAUTH_SCOPES = ['Mail.Read', 'Calendars.Read', 'Contacts.Read', 'offline_access'];
const SCOPE_SECTORS = { 'Mail.Read': 'mail', 'Calendars.Read': 'calendar', 'Contacts.Read': 'contacts' } as const;
const OBJECT_OF = { mail: 'mail.message', calendar: 'calendar.event', contacts: 'contacts.contact' } as const;

/** The descriptor of the OAuth double at `url` (test/support/oauth-provider-double.ts), kind `test-oauth`. */
export function oauthTestProvider(url: string): ProviderDescriptor {
  return {
    kind: 'test-oauth',
    displayName: 'Test OAuth provider',
    sectors: ['mail', 'calendar', 'contacts'],
    objects: Object.values(OBJECT_OF),
    signIn: 'oauth',
    defaultSyncIntervalMinutes: 60,
    oauth: {
      authorizeUrl: `${url}/authorize`,
      tokenUrl: `${url}/token`,
      scopes: TEST_OAUTH_SCOPES,
      pkce: true,
      sectorsOf: (granted) => Object.entries(SCOPE_SECTORS).flatMap(([scope, sector]) => (granted.includes(scope) ? [sector] : [])),
      account: { url: `${url}/me`, field: 'id' },
    },
  };
}

/** Reads the double's API with the sign-in's token; on a 401 it asks for a refresh, as every OAuth connector will. */
export function oauthTestConnector(options: { provider: ProviderDescriptor; apiUrl: string; db: DatabasePool; credentialsKey: Buffer; log: Logger }): Connector {
  const refresher = createTokenRefresher({ db: options.db, credentialsKey: options.credentialsKey, log: options.log, requestTimeoutMs: 2_000 });
  const items = (token: string) => fetch(`${options.apiUrl}/items`, { headers: { authorization: `Bearer ${token}` } });
  return {
    provider: options.provider,
    actions: [],
    async sync(context) {
      const signInId = (await createConnectionQueries(options.db).get(context.connection.id))?.sign_in_id ?? '';
      let token = (context.credentials as OAuthCredentials).accessToken;
      let response = await items(token);
      if (response.status === 401) {
        token = (await refresher.refreshAccessToken(signInId, { rejected: token })).accessToken;
        response = await items(token);
      }
      if (!response.ok) throw new SourceUnavailableError(`the test API answered ${response.status}`);
      const { items: found } = (await response.json()) as { items: Array<{ id: string; title: string }> };
      const sector = context.connection.sector as keyof typeof OBJECT_OF;
      const record = (item: { id: string; title: string }) =>
        ({ mail: { subject: item.title }, calendar: { title: item.title, all_day: false }, contacts: { display_name: item.title } })[sector];
      await context.cache.upsert(OBJECT_OF[sector], found.map((item) => ({ source_id: item.id, ...record(item) })));
      return { mode: 'full', cursor: { at: Date.now() } };
    },
  };
}

/**
 * Signs in at the double as a browser and the sync-worker's exchange would (authorize, then the code
 * exchange), and stores the grant as the exchange does: the app credentials, one sign-in and a mail
 * connection, with no sync scheduled. `expiresAt` replaces the token's lifetime (a past one makes it due).
 */
export async function insertOAuthTestSignIn(
  db: DatabasePool,
  double: OAuthProviderDouble,
  options: { client: { clientId: string; clientSecret: string }; credentialsKey: Buffer; accountId: string; expiresAt?: number },
): Promise<{ signInId: string; connectionId: string; credentials: OAuthCredentials }> {
  const redirectUri = 'http://127.0.0.1/callback';
  double.state.grantedScopes = ['Mail.Read', 'offline_access'];
  const authorize = new URL(`${double.url}/authorize`);
  for (const [name, value] of Object.entries({ client_id: options.client.clientId, redirect_uri: redirectUri, scope: TEST_OAUTH_SCOPES.join(' '), state: 's' })) authorize.searchParams.set(name, value);
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: options.client.clientId, client_secret: options.client.clientSecret };
  const tokens = (await (await fetch(`${double.url}/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string; refresh_token: string; expires_in: number };
  const credentials = { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, expiresAt: options.expiresAt ?? Date.now() + tokens.expires_in * 1000 };
  const signInId = randomUUID();
  const connectionId = randomUUID();
  await db.transaction(async (tx) => {
    const signIns = createSignInQueries(tx);
    await signIns.saveApp('test-oauth', sealCredentials(options.credentialsKey, options.client, providerAppContext('test-oauth')));
    await signIns.insert({ id: signInId, provider: 'test-oauth', sealed: sealCredentials(options.credentialsKey, credentials, signInId), grantedScopes: ['Mail.Read'], accountId: options.accountId });
    await createConnectionQueries(tx).insert({ id: connectionId, provider: 'test-oauth', sector: 'mail', displayName: 'Test mail', signInId, ingestSecretHash: null, syncIntervalMinutes: 60 });
  });
  return { signInId, connectionId, credentials };
}
