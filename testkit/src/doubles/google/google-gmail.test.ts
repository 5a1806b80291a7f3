import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGoogleDouble, type GoogleDouble } from './google-double.ts';

const METADATA = 'https://www.googleapis.com/auth/gmail.metadata';
let google: GoogleDouble;
let token = '';

async function accessToken(scopes: string[]): Promise<string> {
  const authorize = new URL(`${google.url}/o/oauth2/v2/auth`);
  authorize.search = new URLSearchParams({ client_id: google.client.clientId, redirect_uri: 'http://127.0.0.1:1/cb', response_type: 'code', scope: scopes.join(' ') }).toString();
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:1/cb', client_id: google.client.clientId, client_secret: google.client.clientSecret };
  return ((await (await fetch(`${google.url}/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string }).access_token;
}
const get = async (path: string, query: Array<[string, string]> = []) => {
  const answer = await fetch(`${google.url}/gmail/v1/users/me${path}?${new URLSearchParams(query).toString()}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> & { error?: { errors?: Array<{ reason: string }> } } };
};

beforeAll(async () => {
  google = await startGoogleDouble();
  token = await accessToken(['openid', METADATA]);
});
afterAll(async () => google?.close());

describe('the Gmail part of the Google double (reference §5)', () => {
  it('refuses bodies and search to the metadata scope, and a token without a Gmail scope', async () => {
    const [first] = google.gmail.messages.keys();
    expect((await get(`/messages/${first}`)).status).toBe(403); // format defaults to full
    expect((await get(`/messages/${first}`, [['format', 'raw']])).status).toBe(403);
    expect((await get('/messages', [['q', 'from:ada']])).status).toBe(403);
    const other = token;
    token = await accessToken(['openid']);
    expect((await get('/profile')).body.error?.errors?.[0]?.reason).toBe('insufficientPermissions');
    token = other;
  });

  it('pages messages.list with opaque page tokens, newest first, leaving SPAM out', async () => {
    const ids: string[] = [];
    let pageToken: string | undefined;
    do {
      const page = (await get('/messages', pageToken ? [['pageToken', pageToken]] : [])).body as { messages: Array<{ id: string }>; nextPageToken?: string };
      ids.push(...page.messages.map((message) => message.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    const visible = [...google.gmail.messages.values()].filter((message) => !message.labelIds.includes('SPAM')).sort((a, b) => b.internalDate - a.internalDate || (a.id < b.id ? 1 : -1));
    expect(ids).toEqual(visible.map((message) => message.id));
  });

  it('answers format=metadata with only the repeated metadataHeaders, labelIds, threadId and internalDate as a millisecond string', async () => {
    const [message] = google.gmail.messages.values();
    const { body } = await get(`/messages/${message?.id}`, [['format', 'metadata'], ['metadataHeaders', 'From'], ['metadataHeaders', 'subject']]);
    expect(body).toMatchObject({ id: message?.id, threadId: message?.threadId, labelIds: message?.labelIds, internalDate: String(message?.internalDate) });
    expect(((body.payload as { headers: Array<{ name: string }> }).headers).map((header) => header.name)).toEqual(['From', 'Subject']);
  });

  it('lists history after a start with gaps between ids, filtered by historyTypes, and answers 404 once the start is too old', async () => {
    const start = ((await get('/profile')).body as { historyId: string }).historyId;
    const [first] = google.gmail.messages.keys();
    google.gmail.relabel(first ?? '', { remove: ['INBOX'] });
    google.gmail.remove(first ?? '');
    const all = (await get('/history', [['startHistoryId', start]])).body as { history: Array<{ id: string }>; historyId: string };
    expect(all.history).toHaveLength(2);
    expect(BigInt(all.history[1]?.id ?? '0') - BigInt(all.history[0]?.id ?? '0')).toBeGreaterThan(1n);
    const deletedOnly = (await get('/history', [['startHistoryId', start], ['historyTypes', 'messageDeleted']])).body as { history: Array<Record<string, unknown>> };
    expect(deletedOnly.history).toEqual([expect.objectContaining({ messagesDeleted: [{ message: expect.objectContaining({ id: first }) }] })]);
    google.gmail.expireHistory();
    expect((await get('/history', [['startHistoryId', start]])).status).toBe(404);
    const fresh = ((await get('/profile')).body as { historyId: string }).historyId;
    expect((await get('/history', [['startHistoryId', fresh]])).status).toBe(200);
  });
});
