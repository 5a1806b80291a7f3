import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGoogleDouble, type GoogleDouble } from './google-double.ts';

// The Calendar part of the Google double as events.list and the sync guide document it (reference §7.1).
let google: GoogleDouble;
let token = '';

async function accessToken(): Promise<string> {
  const authorize = new URL(`${google.url}/o/oauth2/v2/auth`);
  authorize.search = new URLSearchParams({ client_id: google.client.clientId, redirect_uri: 'http://127.0.0.1:1/cb', response_type: 'code', scope: 'https://www.googleapis.com/auth/calendar.readonly' }).toString();
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:1/cb', client_id: google.client.clientId, client_secret: google.client.clientSecret };
  return ((await (await fetch(`${google.url}/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string }).access_token;
}
type Events = { items: Array<{ id: string }>; nextPageToken?: string; nextSyncToken?: string; error?: { code: number; errors: Array<{ reason: string }> } };
const list = async (query: Record<string, string>) => {
  const answer = await fetch(`${google.url}/calendar/v3/calendars/primary/events?${new URLSearchParams(query).toString()}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: answer.status, body: (await answer.json()) as Events };
};
/** Every page of a listing: the pages, and the sync token the last one carries. */
async function walk(query: Record<string, string>): Promise<Events[]> {
  const pages: Events[] = [];
  let pageToken: string | undefined;
  do {
    const { status, body } = await list({ ...query, ...(pageToken ? { pageToken } : {}) });
    expect(status).toBe(200);
    pages.push(body);
    pageToken = body.nextPageToken;
  } while (pageToken);
  return pages;
}

beforeAll(async () => {
  google = await startGoogleDouble();
  token = await accessToken();
});
afterAll(async () => google?.close());

describe('the Calendar part of the Google double (reference §7.1)', () => {
  it('may answer a page with no event and a nextPageToken, and gives nextSyncToken on the last page only', async () => {
    const pages = await walk({ singleEvents: 'true' });
    // events.list, maxResults: fewer events "or none at all, even if there are more events matching the query".
    expect(pages[0]?.items).toEqual([]);
    expect(pages[0]?.nextPageToken).toBeTruthy();
    expect(pages.flatMap((page) => page.items).length).toBeGreaterThan(0);
    expect(pages.slice(0, -1).every((page) => page.nextSyncToken === undefined)).toBe(true);
    expect(pages.at(-1)?.nextSyncToken).toBeTruthy();
  });

  it('refuses timeMin beside a syncToken (400), and an expired sync token with 410 fullSyncRequired', async () => {
    const syncToken = (await walk({ singleEvents: 'true' })).at(-1)?.nextSyncToken ?? '';
    expect((await list({ singleEvents: 'true', syncToken, timeMin: '2026-01-01T00:00:00Z' })).status).toBe(400);
    google.calendar.expireSyncTokens();
    const expired = await list({ singleEvents: 'true', syncToken });
    expect(expired.status).toBe(410);
    expect(expired.body.error?.errors[0]?.reason).toBe('fullSyncRequired');
  });
});
