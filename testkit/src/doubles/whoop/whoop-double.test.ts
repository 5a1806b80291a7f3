import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWhoopDouble, type WhoopDouble } from './whoop-double.ts';

/**
 * The wearable double's collections answer as WHOOP's OpenAPI file words them (getSleepCollection: `start` —
 * "Return sleeps that occurred after or during (inclusive) this time"; `end` — "Return sleeps that intersect this
 * time or ended before (exclusive)"; `limit` maximum 25).
 */
let whoop: WhoopDouble;
let token: string;
beforeAll(async () => {
  whoop = await startWhoopDouble({ days: 3 });
  const authorize = await fetch(`${whoop.url}/oauth/oauth2/auth?client_id=${whoop.client.clientId}&redirect_uri=${encodeURIComponent('http://127.0.0.1:9/back')}&state=s`, { redirect: 'manual' });
  const code = new URL(authorize.headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:9/back', client_id: whoop.client.clientId, client_secret: whoop.client.clientSecret });
  token = ((await (await fetch(`${whoop.url}/oauth/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string }).access_token;
});
afterAll(async () => {
  await whoop?.close();
});

const sleeps = async (query: Record<string, string>) => {
  const answer = await fetch(`${whoop.url}/developer/v2/activity/sleep?${new URLSearchParams(query)}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: answer.status, ids: answer.ok ? ((await answer.json()) as { records: Array<{ id: string }> }).records.map((record) => record.id) : [] };
};

describe('the wearable double’s collection windows', () => {
  it('includes a sleep still under way at `start` and one starting before `end`, not one starting at `end`', async () => {
    const sleep = [...whoop.sleeps.values()][0];
    if (!sleep) throw new Error('no sleep');
    const middle = new Date((Date.parse(sleep.start) + Date.parse(sleep.end)) / 2).toISOString();
    expect((await sleeps({ start: middle, end: new Date(Date.parse(sleep.end) + 1).toISOString() })).ids).toContain(sleep.id);
    expect((await sleeps({ start: new Date(Date.parse(sleep.start) - 3_600_000).toISOString(), end: middle })).ids).toContain(sleep.id);
    expect((await sleeps({ start: new Date(Date.parse(sleep.start) - 3_600_000).toISOString(), end: sleep.start })).ids).not.toContain(sleep.id);
    expect((await sleeps({ start: new Date(Date.parse(sleep.end) + 1).toISOString(), end: new Date(Date.parse(sleep.end) + 3_600_000).toISOString() })).ids).not.toContain(sleep.id);
  });

  it('refuses a limit above 25 with a 400 and serves 25', async () => {
    expect((await sleeps({ limit: '26' })).status).toBe(400);
    expect((await sleeps({ limit: '25' })).status).toBe(200);
  });
});

describe('the wearable double’s rate limit', () => {
  it('answers the 101st request within a minute with 429 and the three X-RateLimit headers (100 a minute per client)', async () => {
    const limited = await startWhoopDouble({ days: 1 });
    try {
      const authorize = await fetch(`${limited.url}/oauth/oauth2/auth?client_id=${limited.client.clientId}&redirect_uri=${encodeURIComponent('http://127.0.0.1:9/back')}&state=s`, { redirect: 'manual' });
      const code = new URL(authorize.headers.get('location') ?? '').searchParams.get('code') ?? '';
      const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:9/back', client_id: limited.client.clientId, client_secret: limited.client.clientSecret });
      const access = ((await (await fetch(`${limited.url}/oauth/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string }).access_token;
      const call = () => fetch(`${limited.url}/developer/v2/activity/sleep`, { headers: { authorization: `Bearer ${access}` } });
      for (let i = 1; i <= 100; i += 1) expect((await call()).status).toBe(200);
      const refused = await call();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('x-ratelimit-limit')).toBe('100, 100;window=60, 10000;window=86400');
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(refused.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });
});
