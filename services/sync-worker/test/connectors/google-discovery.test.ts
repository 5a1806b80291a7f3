import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkGoogleAnswer, checkGoogleRequest, discoveryApiOf, startGoogleDouble, type DiscoveryApi, type GoogleDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger } from '@pcg/testkit/testing';
import type { CacheWriter, ConnectorContext, SyncOutcome } from '../../src/connectors/connector-types.ts';
import { createGmailConnector } from '../../src/connectors/gmail/gmail-connector.ts';
import { createGoogleConnector } from '../../src/connectors/google/google-connector.ts';

// Design §8.2, issue 32 (Schema checks): every request the Google connectors send and every answer the Google
// double gives, checked against Google's own discovery documents (testkit/src/doubles/google/discovery).
let google: GoogleDouble;
let accessToken = '';

async function signIn(): Promise<string> {
  const redirectUri = 'http://127.0.0.1:1/cb';
  const scope = 'openid https://www.googleapis.com/auth/calendar.readonly https://www.googleapis.com/auth/contacts.readonly https://www.googleapis.com/auth/gmail.metadata';
  const authorize = new URL(`${google.url}/o/oauth2/v2/auth`);
  authorize.search = new URLSearchParams({ client_id: google.client.clientId, redirect_uri: redirectUri, response_type: 'code', scope }).toString();
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: google.client.clientId, client_secret: google.client.clientSecret };
  return ((await (await fetch(`${google.url}/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string }).access_token;
}

function contextFor(provider: string, sector: string, cursor: unknown): ConnectorContext {
  const rows = new Map<string, unknown>();
  const cache: CacheWriter = {
    async upsert(_object, records) {
      for (const record of records) rows.set((record as { source_id: string }).source_id, record);
      return records.length;
    },
    sourceIds: async () => [...rows.keys()],
    idsOf: async () => new Map(),
    async remove(_object, ids) {
      for (const id of ids) rows.delete(id);
      return ids.length;
    },
  };
  return {
    connection: { id: `${provider}-${sector}`, provider, sector, displayName: provider, signInId: 's1' },
    credentials: { accessToken, refreshToken: null, expiresAt: null },
    refreshToken: async () => undefined,
    cursor,
    saveProgress: async () => undefined,
    signal: new AbortController().signal,
    requestTimeoutMs: 5_000,
    cache,
    log: createCapturingLogger(provider).log,
  };
}

const calendarAndContacts = () => createGoogleConnector({ calendarBase: `${google.url}/calendar/v3`, peopleBase: `${google.url}/v1` });
const gmail = () => createGmailConnector({ apiBase: `${google.url}/gmail/v1` });

/** A full sync, a change at the source, then an incremental sync from the cursor the first one gave. */
async function twoSyncs(sync: (context: ConnectorContext) => Promise<SyncOutcome> | undefined, provider: string, sector: string, change: () => void): Promise<void> {
  const first = await sync(contextFor(provider, sector, null));
  change();
  const second = await sync(contextFor(provider, sector, first?.cursor ?? null));
  expect(second?.mode).toBe('incremental');
}

const exchangesOf = (api: DiscoveryApi, from: number) => google.state.exchanges.slice(from).filter((exchange) => discoveryApiOf(exchange.path) === api);

beforeAll(async () => {
  google = await startGoogleDouble();
  accessToken = await signIn();
});
afterAll(async () => google?.close());

describe('the Google connectors and the Google double against Google\'s discovery documents', () => {
  it.each([
    ['calendar', 'Calendar v3'],
    ['people', 'People v1'],
    ['gmail', 'Gmail v1'],
  ] as const)('%s (%s): every request a full and an incremental sync send names the method\'s own parameters with their types, and every answer fits the method\'s response schema', async (api, _title) => {
    const from = google.state.exchanges.length;
    if (api === 'calendar') {
      await twoSyncs((context) => calendarAndContacts().sync?.(context), 'google', 'calendar', () => {
        google.calendar.add({ id: 'discoveryadded', calendarId: 'primary-calendar@example.com', summary: 'Added', start: { date: '2099-01-01' }, end: { date: '2099-01-02' } });
        google.calendar.cancelOccurrence('weeklysync', 3);
        google.calendar.cancel('dentist');
      });
    } else if (api === 'people') {
      await twoSyncs((context) => calendarAndContacts().sync?.(context), 'google', 'contacts', () => {
        google.people.update('people/c1', { names: [{ displayName: 'Ada King', givenName: 'Ada', familyName: 'King' }] });
        google.people.remove('people/c3');
      });
    } else {
      const [first] = google.gmail.messages.keys();
      await twoSyncs((context) => gmail().sync?.(context), 'gmail', 'mail', () => {
        google.gmail.add({ from: 'Emmy Noether <emmy@example.com>', subject: 'Invariants', daysAgo: 0 });
        google.gmail.relabel(first ?? '', { remove: ['UNREAD'], add: ['STARRED'] });
      });
    }
    const exchanges = exchangesOf(api, from);
    expect(exchanges.length).toBeGreaterThan(2);
    expect(exchanges.filter((exchange) => exchange.status !== 200)).toEqual([]);
    expect(exchanges.flatMap((exchange) => checkGoogleRequest(api, exchange))).toEqual([]);
    expect(exchanges.flatMap((exchange) => checkGoogleAnswer(api, exchange, exchange.body))).toEqual([]);
  });

  it('the checks find what departs from the documents: an unknown or repeated parameter, a wrong type, format or enum, a missing required one, an unknown path, and an answer with a field Google does not send', () => {
    const request = (path: string, query: string) => ({ path, query: new URLSearchParams(query) });
    const messages = (problems: Array<{ message: string }>) => problems.map((problem) => problem.message);
    expect(checkGoogleRequest('calendar', request('/calendar/v3/calendars/primary/events', 'singleEvents=true&maxResults=250'))).toEqual([]);
    expect(messages(checkGoogleRequest('calendar', request('/calendar/v3/calendars/primary/events', 'singleEvent=true')))).toEqual(['singleEvent is not a parameter of calendar.events.list']);
    expect(messages(checkGoogleRequest('calendar', request('/calendar/v3/calendars/primary/events', 'maxResults=many&orderBy=start')))).toEqual([
      'maxResults=many is not an integer',
      'orderBy=start is none of startTime, updated',
    ]);
    expect(messages(checkGoogleRequest('gmail', request('/gmail/v1/users/me/messages/abc', 'format=metadata&format=full')))).toEqual(['format is given 2 times but does not repeat']);
    expect(checkGoogleRequest('gmail', request('/gmail/v1/users/me/messages/abc', 'format=metadata&metadataHeaders=From&metadataHeaders=Subject'))).toEqual([]);
    expect(messages(checkGoogleRequest('gmail', request('/gmail/v1/users/me/history', 'startHistoryId=-4&historyTypes=messageAdded')))).toEqual(['startHistoryId=-4 is not a uint64']);
    expect(messages(checkGoogleRequest('calendar', { method: 'POST', path: '/calendar/v3/calendars/primary/events/quickAdd', query: new URLSearchParams() }))).toEqual(['the required text is missing']);
    expect(messages(checkGoogleRequest('people', request('/v1/people/me/connections', 'requestSyncToken=yes')))).toEqual(['requestSyncToken=yes is not a boolean']);
    expect(messages(checkGoogleRequest('gmail', request('/gmail/v1/users/me/threads/abc/messages', '')))).toEqual(['no gmail method has this path']);
    const profile = request('/gmail/v1/users/me/profile', '');
    expect(checkGoogleAnswer('gmail', profile, { emailAddress: 'a@example.com', historyId: '12', messagesTotal: 3, threadsTotal: 2 })).toEqual([]);
    expect(messages(checkGoogleAnswer('gmail', profile, { emailAddress: 'a@example.com', historyId: 12, unread: 1 })).sort()).toEqual(['/ must NOT have additional properties: unread', '/historyId must be string']);
  });
});
