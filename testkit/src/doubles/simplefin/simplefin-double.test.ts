import { afterEach, describe, expect, it } from 'vitest';
import { startSimplefinDouble, type SimplefinDouble } from './simplefin-double.ts';

/**
 * The bridge double answers as the SimpleFIN protocol (simplefin.github.com protocol.md "GET /accounts") and the
 * live Bridge's reported limits say (issue 32: the 90-day cap and the daily budget are on by default).
 */
let bridge: SimplefinDouble | undefined;
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

const DAY_S = 86_400;

async function claim(double: SimplefinDouble): Promise<{ base: string; authorization: string }> {
  const claimUrl = Buffer.from(double.issueSetupToken(), 'base64').toString('utf8');
  const access = new URL(await (await fetch(claimUrl, { method: 'POST', headers: { 'content-length': '0' } })).text());
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(access.username)}:${decodeURIComponent(access.password)}`).toString('base64')}`;
  access.username = '';
  access.password = '';
  return { base: access.toString().replace(/\/$/, ''), authorization };
}

async function accounts(base: string, authorization: string, query: string) {
  const answer = await fetch(`${base}/accounts?${query}`, { headers: { authorization } });
  return { status: answer.status, body: answer.status === 200 ? ((await answer.json()) as { errors?: string[]; errlist?: Array<{ code: string; msg: string }>; accounts: Array<{ id: string; transactions?: Array<{ id: string; posted: number }> }> }) : undefined };
}

describe('the bank-link bridge double', () => {
  it('caps a range over 90 days to its last 90 and says so in errors (v1) and as gen.api in errlist (v2); over 45 days it warns', async () => {
    const now = Math.floor(Date.now() / 1000);
    const old = { id: 'TRN-old', posted: now - 100 * DAY_S, amount: '-1.00', description: 'OLD' };
    bridge = await startSimplefinDouble();
    bridge.addTransaction('ACT-chase-chk', old);
    const { base, authorization } = await claim(bridge);
    const v1 = await accounts(base, authorization, `start-date=${now - 120 * DAY_S}`);
    expect(v1.body?.errors).toEqual(['Requested date range exceeds limit of 90 days and was capped.']);
    expect(v1.body?.accounts.flatMap((account) => account.transactions ?? []).map((tx) => tx.id)).not.toContain('TRN-old');
    const v2 = await accounts(base, authorization, `start-date=${now - 120 * DAY_S}&version=2`);
    expect(v2.body?.errlist).toEqual([{ code: 'gen.api', msg: 'Requested date range exceeds limit of 90 days and was capped.' }]);
    const advised = await accounts(base, authorization, `start-date=${now - 60 * DAY_S}`);
    expect(advised.body?.errors).toEqual(['Requested date range exceeds recommended range of 45 days. In the future, this may be capped.']);
    const within = await accounts(base, authorization, `start-date=${now - 30 * DAY_S}`);
    expect(within.body?.errors).toEqual([]);
  });

  it('keeps start-date inclusive and end-date exclusive', async () => {
    const at = Math.floor(Date.now() / 1000) - 10 * DAY_S;
    bridge = await startSimplefinDouble();
    bridge.addTransaction('ACT-chase-chk', { id: 'TRN-edge', posted: at, amount: '-2.00', description: 'EDGE' });
    const { base, authorization } = await claim(bridge);
    const ids = async (query: string) => (await accounts(base, authorization, query)).body?.accounts.flatMap((account) => account.transactions ?? []).map((tx) => tx.id);
    expect(await ids(`start-date=${at}&end-date=${at + 1}`)).toEqual(['TRN-edge']);
    expect(await ids(`start-date=${at - 1}&end-date=${at}`)).toEqual([]);
  });

  it('counts each access URL’s requests over 24 hours: past 48 it warns in errors, past 96 it answers 403', async () => {
    bridge = await startSimplefinDouble();
    const { base, authorization } = await claim(bridge);
    const statuses: number[] = [];
    let warned: string[] | undefined;
    for (let i = 1; i <= 97; i += 1) {
      const answer = await accounts(base, authorization, 'balances-only=1');
      statuses.push(answer.status);
      if (i === 48) expect(answer.body?.errors).toEqual([]);
      if (i === 49) warned = answer.body?.errors;
    }
    expect(warned).toHaveLength(1);
    expect(warned?.[0]).toMatch(/48/);
    expect(statuses.slice(0, 96).every((status) => status === 200)).toBe(true);
    expect(statuses[96]).toBe(403);
    expect([...bridge.requestsToday().values()]).toEqual([97]);
    // Another access URL has its own budget.
    const other = await claim(bridge);
    expect((await accounts(other.base, other.authorization, 'balances-only=1')).status).toBe(200);
  });
});
