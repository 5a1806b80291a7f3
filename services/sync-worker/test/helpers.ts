import { randomBytes, randomUUID } from 'node:crypto';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sealCredentials } from '@pcg/shared/crypto';
import { createSignInQueries, providerAppContext } from '@pcg/shared/sign-ins';
import { createOriginRebaser, MICROSOFT_LOGIN_BASE } from '@pcg/shared/providers';
import { sql, type DatabasePool } from '@pcg/shared/db';
import { z } from 'zod';

/** One credentials key per test run, handed to the worker through CREDENTIALS_KEY. */
export const TEST_KEY = randomBytes(32);

/** Worker settings for tests: short timeouts and backoff, so failures play out in seconds. */
export function workerEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    CREDENTIALS_KEY: TEST_KEY.toString('base64'),
    SOURCE_TIMEOUT_MS: '500',
    SYNC_BACKOFF_MS: '100',
    SYNC_LOCK_MS: '2000',
    SHUTDOWN_GRACE_MS: '1000',
    ...overrides,
  };
}

/** Inserts a Home Assistant connection the way the Console does: a sign-in holding the sealed credentials, bound to its id. */
export async function insertHubConnection(db: DatabasePool, credentials: { baseUrl: string; token: string }, status: 'active' | 'paused' = 'active'): Promise<string> {
  const id = randomUUID();
  const signInId = randomUUID();
  await db.transaction(async (tx) => {
    await createSignInQueries(tx).insert({ id: signInId, provider: 'home-assistant', sealed: sealCredentials(TEST_KEY, credentials, signInId), grantedScopes: [], accountId: null });
    const connections = createConnectionQueries(tx);
    await connections.insert({ id, provider: 'home-assistant', sector: 'home', displayName: 'Test hub', signInId, ingestSecretHash: null, syncIntervalMinutes: 15 });
    if (status === 'paused') await connections.pause(id);
  });
  return id;
}

export const ConnectionStateSchema = z.object({
  status: z.string(),
  last_error: z.string().nullable(),
  last_synced_at: z.string().nullable(),
  sync_cursor: z.unknown(),
  actions: z.array(z.object({ name: z.string(), sector: z.string(), description: z.string(), input_schema: z.record(z.string(), z.unknown()) })),
});

export function connectionState(db: DatabasePool, id: string) {
  return db.one(sql.type(ConnectionStateSchema)`
    SELECT status, last_error, last_synced_at, sync_cursor, actions FROM connections WHERE id = ${id}::uuid`);
}

const EntityRowSchema = z.object({ id: z.string(), source_id: z.string(), state: z.string().nullable(), synced_at: z.string(), attributes: z.unknown() });

export function entityRows(db: DatabasePool, connectionId: string) {
  return db.any(sql.type(EntityRowSchema)`
    SELECT id, source_id, state, synced_at, attributes FROM home_entities WHERE connection_id = ${connectionId}::uuid ORDER BY source_id`);
}

/**
 * Signs in at the Graph double as a browser would (authorize, then the code exchange) and inserts the
 * sign-in and one connection of `sector` the way the sync-worker's exchange does, with the provider's
 * application credentials saved for refreshes.
 */
export async function insertGraphConnection(db: DatabasePool, graph: { env: { MICROSOFT_LOGIN_BASE_URL: string }; client: { clientId: string; clientSecret: string } }, sector: 'calendar' | 'mail' | 'contacts'): Promise<string> {
  const login = createOriginRebaser(graph.env)(MICROSOFT_LOGIN_BASE);
  const redirectUri = 'http://127.0.0.1/callback';
  const authorize = new URL(`${login}/oauth2/v2.0/authorize`);
  for (const [name, value] of Object.entries({ client_id: graph.client.clientId, redirect_uri: redirectUri, scope: 'Mail.Read Calendars.Read Contacts.Read offline_access', state: 's' })) authorize.searchParams.set(name, value);
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: graph.client.clientId, client_secret: graph.client.clientSecret };
  const tokens = (await (await fetch(`${login}/oauth2/v2.0/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string; refresh_token: string; expires_in: number };
  const credentials = { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, expiresAt: Date.now() + tokens.expires_in * 1000 };
  const id = randomUUID();
  const signInId = randomUUID();
  await db.transaction(async (tx) => {
    const signIns = createSignInQueries(tx);
    await signIns.saveApp('microsoft', sealCredentials(TEST_KEY, graph.client, providerAppContext('microsoft')));
    await signIns.insert({ id: signInId, provider: 'microsoft', sealed: sealCredentials(TEST_KEY, credentials, signInId), grantedScopes: ['Mail.Read', 'Calendars.Read', 'Contacts.Read'], accountId: signInId });
    await createConnectionQueries(tx).insert({ id, provider: 'microsoft', sector, displayName: `Test ${sector}`, signInId, ingestSecretHash: null, syncIntervalMinutes: 15 });
  });
  return id;
}

/** Claims a setup token at a bridge double and stores the access URL as the claim job does: sealed on a sign-in with one finance connection. */
export async function insertBridgeConnection(db: DatabasePool, setupToken: string): Promise<string> {
  const claimUrl = Buffer.from(setupToken, 'base64').toString('utf8');
  const answer = await fetch(claimUrl, { method: 'POST' });
  if (answer.status !== 200) throw new Error(`the bridge double refused the claim (${answer.status})`);
  const accessUrl = (await answer.text()).trim();
  const id = randomUUID();
  const signInId = randomUUID();
  await db.transaction(async (tx) => {
    await createSignInQueries(tx).insert({ id: signInId, provider: 'simplefin', sealed: sealCredentials(TEST_KEY, { accessUrl }, signInId), grantedScopes: [], accountId: null });
    await createConnectionQueries(tx).insert({ id, provider: 'simplefin', sector: 'finance', displayName: 'Test bridge', signInId, ingestSecretHash: null, syncIntervalMinutes: 360 });
  });
  return id;
}

/** Pretends the bridge was last asked two hours ago, so the next sync may ask again (it keeps an hour between requests). */
export async function bridgeAskedLongAgo(db: DatabasePool, id: string): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE connections SET sync_cursor = jsonb_build_object('requestedAt', (extract(epoch FROM now()) * 1000)::bigint - 7200000) WHERE id = ${id}::uuid`);
}

const TransactionRowSchema = z.object({ id: z.string(), source_id: z.string(), account_id: z.string().nullable(), amount: z.string(), posted_on: z.string().nullable(), pending: z.boolean() });

export function transactionRows(db: DatabasePool, connectionId: string) {
  return db.any(sql.type(TransactionRowSchema)`
    SELECT id, source_id, account_id, amount::text AS amount, posted_on::text AS posted_on, pending FROM finance_transactions WHERE connection_id = ${connectionId}::uuid ORDER BY source_id`);
}

export function accountSourceIds(db: DatabasePool, connectionId: string) {
  return db.anyFirst(sql.type(z.object({ source_id: z.string() }))`SELECT source_id FROM finance_accounts WHERE connection_id = ${connectionId}::uuid ORDER BY source_id`);
}

/**
 * Signs in at a provider double the way the exchange does (authorization code, then the token answer),
 * saves the provider's application, and inserts the sign-in and one connection with the sealed OAuth
 * credentials and the granted scopes.
 */
export async function insertOAuthConnection(
  db: DatabasePool,
  options: { provider: string; sector: string; authorizeUrl: string; tokenUrl: string; client: { clientId: string; clientSecret: string }; scopes?: readonly string[] },
): Promise<string> {
  const redirectUri = 'http://127.0.0.1:1/callback';
  const authorize = new URL(options.authorizeUrl);
  authorize.search = new URLSearchParams({ client_id: options.client.clientId, redirect_uri: redirectUri, response_type: 'code', state: 's', ...(options.scopes ? { scope: options.scopes.join(' ') } : {}) }).toString();
  const consent = await fetch(authorize, { redirect: 'manual' });
  const code = new URL(consent.headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: options.client.clientId, client_secret: options.client.clientSecret };
  const answer = (await (await fetch(options.tokenUrl, { method: 'POST', body: new URLSearchParams(form) })).json()) as {
    access_token: string;
    refresh_token?: string;
    expires_in: number;
    scope: string;
  };
  const scopes = answer.scope.split(' ');
  const credentials = { accessToken: answer.access_token, refreshToken: answer.refresh_token ?? null, expiresAt: Date.now() + answer.expires_in * 1000, scopes };
  const id = randomUUID();
  const signInId = randomUUID();
  await db.transaction(async (tx) => {
    const signIns = createSignInQueries(tx);
    await signIns.saveApp(options.provider, sealCredentials(TEST_KEY, options.client, providerAppContext(options.provider)));
    await signIns.insert({ id: signInId, provider: options.provider, sealed: sealCredentials(TEST_KEY, credentials, signInId), grantedScopes: scopes, accountId: null });
    await createConnectionQueries(tx).insert({ id, provider: options.provider, sector: options.sector, displayName: `Test ${options.provider}`, signInId, ingestSecretHash: null, syncIntervalMinutes: 60 });
  });
  return id;
}

/** Saves the aggregator application and an item's access token as the link flow does: sealed on a sign-in with one finance connection. */
export async function insertPlaidConnection(db: DatabasePool, aggregator: { app: { clientId: string; secret: string }; createItem(): { itemId: string; accessToken: string } }): Promise<{ id: string; itemId: string }> {
  const item = aggregator.createItem();
  const id = randomUUID();
  const signInId = randomUUID();
  await db.transaction(async (tx) => {
    const signIns = createSignInQueries(tx);
    await signIns.saveApp('plaid', sealCredentials(TEST_KEY, { clientId: aggregator.app.clientId, clientSecret: aggregator.app.secret, environment: 'sandbox' }, providerAppContext('plaid')));
    await signIns.insert({ id: signInId, provider: 'plaid', sealed: sealCredentials(TEST_KEY, { accessToken: item.accessToken, itemId: item.itemId }, signInId), grantedScopes: ['transactions'], accountId: item.itemId });
    await createConnectionQueries(tx).insert({ id, provider: 'plaid', sector: 'finance', displayName: 'Test aggregator', signInId, ingestSecretHash: null, syncIntervalMinutes: 240 });
  });
  return { id, itemId: item.itemId };
}
