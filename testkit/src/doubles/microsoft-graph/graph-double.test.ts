import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGraphDouble, type GraphDouble } from './graph-double.ts';

// The Graph double's calendarView delta as real answers show it (design §8.2, issue 32): each expectation is a
// literal from the cited report, not the double's own constants.
let graph: GraphDouble;
let token = '';
const HOUR = 3_600_000;
const WEEK = 7 * 24 * HOUR;

async function signIn(scope = 'offline_access Calendars.Read'): Promise<string> {
  const authorize = new URL(`${graph.url}/common/oauth2/v2.0/authorize`);
  authorize.search = new URLSearchParams({ client_id: graph.client.clientId, redirect_uri: 'http://127.0.0.1:1/cb', response_type: 'code', scope }).toString();
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:1/cb', client_id: graph.client.clientId, client_secret: graph.client.clientSecret };
  return ((await (await fetch(`${graph.url}/common/oauth2/v2.0/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string }).access_token;
}

type Page = { value: Array<Record<string, unknown>>; '@odata.nextLink'?: string; '@odata.deltaLink'?: string; error?: { code: string; message: string } };
const get = async (url: string): Promise<{ status: number; body: Page }> => {
  const answer = await fetch(url, { headers: { authorization: `Bearer ${token}`, prefer: 'odata.maxpagesize=50' } });
  return { status: answer.status, body: (await answer.json()) as Page };
};
/** One whole delta round from `url`: every item, and the deltaLink it ends with. */
async function round(url: string): Promise<{ items: Array<Record<string, unknown>>; deltaLink: string }> {
  const items: Array<Record<string, unknown>> = [];
  let next = url;
  for (;;) {
    const { status, body } = await get(next);
    expect(status).toBe(200);
    items.push(...body.value);
    if (body['@odata.deltaLink']) return { items, deltaLink: body['@odata.deltaLink'] };
    const link = body['@odata.nextLink'];
    if (!link) throw new Error('a delta page with neither a nextLink nor a deltaLink');
    next = link;
  }
}
const start = Date.UTC(2030, 0, 7, 9);
const windowUrl = () => `${graph.url}/v1.0/me/calendarView/delta?startDateTime=${new Date(start - WEEK).toISOString()}&endDateTime=${new Date(start + 8 * WEEK).toISOString()}`;

beforeAll(async () => {
  graph = await startGraphDouble();
  token = await signIn();
  graph.addWeeklySeries('series-a', 'Standup', start, 3, 30, { location: 'Room 1' });
});
afterAll(async () => graph?.close());

describe('the Graph double: calendarView delta (reference §6.2)', () => {
  it('sends an occurrence with only @odata.type, @odata.etag, id, seriesMasterId, type, start and end, and the series master whole with its first occurrence\'s times', async () => {
    const { items } = await round(windowUrl());
    const occurrences = items.filter((item) => item.type === 'occurrence');
    expect(occurrences).toHaveLength(3);
    // microsoftgraph/microsoft-graph-docs issues 7632 and 22197: "their occurrences only have these properties".
    for (const occurrence of occurrences) expect(Object.keys(occurrence).sort()).toEqual(['@odata.etag', '@odata.type', 'end', 'id', 'seriesMasterId', 'start', 'type']);
    expect(occurrences[0]).toMatchObject({ '@odata.type': '#microsoft.graph.event', seriesMasterId: 'series-a', start: { dateTime: '2030-01-07T09:00:00.0000000', timeZone: 'UTC' } });
    // ridafkih/keeper.sh pull request 409: the master is listed "with the first occurrence's start/end".
    const master = items.find((item) => item.type === 'seriesMaster');
    expect(master).toMatchObject({ id: 'series-a', subject: 'Standup', location: { displayName: 'Room 1' }, start: { dateTime: '2030-01-07T09:00:00.0000000' }, end: { dateTime: '2030-01-07T09:30:00.0000000' } });
  });

  it('lists an event made outside the window after the round as @removed with the reason deleted', async () => {
    const { deltaLink } = await round(windowUrl());
    graph.store.put('event', { id: 'far-away', subject: 'Outside', start: start + 52 * WEEK, end: start + 52 * WEEK + HOUR, type: 'singleInstance' });
    const { items } = await round(deltaLink);
    // microsoftgraph/microsoft-graph-docs issue 6599: new events outside the time frame "are shown with @removed reason=deleted".
    expect(items).toEqual([{ id: 'far-away', '@removed': { reason: 'deleted' } }]);
  });

  it('refuses an expired delta token with 410 Gone and the code SyncStateNotFound', async () => {
    const { deltaLink } = await round(windowUrl());
    graph.store.expireDeltaTokens();
    const { status, body } = await get(deltaLink);
    // microsoftgraph/microsoft-graph-docs issue 2350: `"status": "410 Gone"`, `"code": "SyncStateNotFound"`.
    expect(status).toBe(410);
    expect(body.error?.code).toBe('SyncStateNotFound');
    expect(body.error?.message).toMatch(/^The sync state generation is not found/);
  });

  it('takes the least privileged Calendars.ReadBasic for calendarView delta, and refuses a token without a calendar permission with 403 ErrorAccessDenied', async () => {
    const asked = token;
    try {
      // user-list-calendarview and event-delta, Permissions: Calendars.ReadBasic is the least privileged (reference §6.1).
      token = await signIn('offline_access Calendars.ReadBasic');
      expect((await get(windowUrl())).status).toBe(200);
      token = await signIn('offline_access Mail.Read');
      const { status, body } = await get(windowUrl());
      expect(status).toBe(403);
      expect(body.error?.code).toBe('ErrorAccessDenied');
    } finally {
      token = asked;
    }
  });
});
