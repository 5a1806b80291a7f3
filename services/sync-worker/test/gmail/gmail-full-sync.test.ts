import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGoogleDouble, type GoogleDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger } from '@pcg/testkit/testing';
import type { CacheWriter, ConnectorContext } from '../../src/connectors/connector-types.ts';
import { createGmailConnector } from '../../src/connectors/gmail/gmail-connector.ts';
import { SourceRateLimitedError } from '../../src/connectors/kit/source-errors.ts';

// The Gmail full sync against the Google double, one step at a time: what an attempt cut short by a 429
// leaves in its cursor, and how the next attempt goes on from it (issue 31 item 9).
let google: GoogleDouble;
let accessToken = '';

async function signIn(): Promise<string> {
  const redirectUri = 'http://127.0.0.1:1/cb';
  const authorize = new URL(`${google.url}/o/oauth2/v2/auth`);
  authorize.search = new URLSearchParams({ client_id: google.client.clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid https://www.googleapis.com/auth/gmail.metadata' }).toString();
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: google.client.clientId, client_secret: google.client.clientSecret };
  return ((await (await fetch(`${google.url}/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string }).access_token;
}

/** The cache as a map of source ids, and the cursors the sync stored as progress. */
function contextWith(cursor: unknown, rows: Map<string, unknown>) {
  const saved: unknown[] = [];
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
  const context: ConnectorContext = {
    connection: { id: 'c1', provider: 'gmail', sector: 'mail', displayName: 'Gmail', signInId: 's1' },
    credentials: { accessToken, refreshToken: null, expiresAt: null },
    refreshToken: async () => undefined,
    cursor,
    saveProgress: async (progress) => void saved.push(progress),
    signal: new AbortController().signal,
    requestTimeoutMs: 5_000,
    cache,
    log: createCapturingLogger('gmail').log,
  };
  return { context, saved };
}

const sync = (context: ConnectorContext) => createGmailConnector({ apiBase: `${google.url}/gmail/v1` }).sync?.(context);
const gets = (from: number) => google.state.requests.slice(from).filter((call) => call.path.startsWith('/gmail/v1/users/me/messages/')).map((call) => call.path.split('/').at(-1) ?? '');
const lists = (from: number) => google.state.requests.slice(from).filter((call) => call.path === '/gmail/v1/users/me/messages');
const visibleIds = () => [...google.gmail.messages.values()].filter((message) => !message.labelIds.some((label) => label === 'SPAM' || label === 'TRASH')).map((message) => message.id).sort();

beforeAll(async () => {
  google = await startGoogleDouble();
  accessToken = await signIn();
});
afterAll(async () => google?.close());

describe('a Gmail full sync cut short by a 429', () => {
  it('stores the history id of its start, the page it was on and the ids of it done; the next attempt asks for none of them again and removes what the listing no longer names', async () => {
    const rows = new Map<string, unknown>([['gone-since', { source_id: 'gone-since' }]]);
    const first = contextWith(null, rows);
    google.gmail.state.rateLimitGetAt = google.gmail.state.gets + 6; // on the second page (four a page)
    const from = google.state.requests.length;
    await expect(sync(first.context)).rejects.toBeInstanceOf(SourceRateLimitedError);
    const progress = first.saved.at(-1) as { account: string; historyId: string; full: { pageToken: string | null; done: string[] } };
    expect(progress.full.pageToken).not.toBeNull();
    expect(progress.full.done.length).toBeGreaterThan(0);
    const firstGets = gets(from);
    const refused = firstGets[5];
    expect(progress.full.done).not.toContain(refused);
    const historyAtStart = progress.historyId;

    google.gmail.add({ from: 'Emmy Noether <emmy@example.com>', subject: 'Invariants', daysAgo: 0 }); // moves the mailbox's history id on
    const second = contextWith(progress, rows);
    const again = google.state.requests.length;
    const outcome = await sync(second.context);
    const secondGets = gets(again);
    expect(secondGets).toContain(refused);
    expect(secondGets.filter((id) => id !== refused && firstGets.includes(id))).toEqual([]);
    expect(google.state.requests.slice(again).some((call) => call.path === '/gmail/v1/users/me/profile')).toBe(false);
    expect(outcome).toEqual({ mode: 'full', cursor: { account: progress.account, historyId: historyAtStart } });
    // Every message the first page and the rest hold, the row the listing no longer names removed; the
    // mail that came during the sync waits for the history from the start.
    expect([...rows.keys()].sort()).toEqual(visibleIds().filter((id) => google.gmail.messages.get(id)?.headers.every((header) => header.value !== 'Invariants')));
  });

  it('goes on from the first page when Gmail no longer takes the stored page token (400), keeping the history id of its start', async () => {
    const rows = new Map<string, unknown>();
    const cursor = { account: 'demo.person@example.com', historyId: '1001', full: { pageToken: 'not-a-page-token', done: [] } };
    const from = google.state.requests.length;
    const outcome = await sync(contextWith(cursor, rows).context);
    expect(lists(from)[0]?.query.get('pageToken')).toBe('not-a-page-token');
    expect(lists(from)[1]?.query.has('pageToken')).toBe(false);
    expect(outcome).toEqual({ mode: 'full', cursor: { account: 'demo.person@example.com', historyId: '1001' } });
    expect([...rows.keys()].sort()).toEqual(visibleIds());
  });
});
