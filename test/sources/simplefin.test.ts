import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { blockingConnection, openSyncProducer } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { startSimplefinDouble, type BridgeAccount, type SimplefinDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { SETUP_TOKEN_REFUSED, SETUP_TOKEN_USED } from '../../services/sync-worker/src/sign-ins/token-claim.ts';
import { BRIDGE_PAYMENT_REQUIRED } from '../../services/sync-worker/src/connectors/simplefin/simplefin-classifier.ts';
import { accountKeys } from '../../services/sync-worker/src/connectors/simplefin/simplefin-keys.ts';

// The bank-link bridge end to end (issue 16): the Console's claim route, the sync-worker's single-use
// claim and windowed sync, and what the operator and an agent then read.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
let bridge: SimplefinDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let queue: Queue;
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });

async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await fetch(`${consoleService.address}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}
const claim = (body: Record<string, unknown>) => post('/api/connect/simplefin/claim', body);
const rowsOf = async (object: string, where: unknown[] = []) =>
  ((await post('/api/data/finance', { object, where, limit: 200 })).body as { rows: Array<Record<string, unknown>> }).rows;
const context = async () => (await (await fetch(`${consoleService.address}/api/operator/context`)).json()) as { connections: Array<Record<string, unknown>> };
/** The `/accounts` requests of syncs: the claim's own check of the access (issue 32) asks `balances-only` once, and is left out. */
const syncRequests = (double: SimplefinDouble) => double.accountRequests().filter((request) => !request.query.has('balances-only'));
const claimPosts = () => bridge.requests.filter((request) => request.path.startsWith('/simplefin/claim/')).length;
const lastSynced = (id: string) =>
  testEnv.db.oneFirst(sql.type(z.object({ at: z.string().nullable() }))`SELECT last_synced_at::text AS at FROM connections WHERE id = ${id}::uuid`);

async function syncNow(id: string): Promise<void> {
  const jobId = await producer.requestSync(id);
  await waitFor(async () => (['completed', 'failed'].includes(await queue.getJobState(jobId)) ? true : undefined), 15_000, `sync ${jobId}`);
}
async function askedLongAgo(id: string): Promise<void> {
  await testEnv.db.query(sql.unsafe`
    UPDATE connections SET sync_cursor = jsonb_build_object('requestedAt', (extract(epoch FROM now()) * 1000)::bigint - 7200000) WHERE id = ${id}::uuid`);
}

beforeAll(async () => {
  bridge = await startSimplefinDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', SIMPLEFIN_ALLOW_LOOPBACK: 'true' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'simplefin-test'), prefix: bullmqPrefix(settings()) });
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await producer?.close();
  await queue?.close();
  await bridge?.close();
});

describe('the bank-link bridge', () => {
  let connectionId = '';
  let token = '';

  it('shows the claim host before any claim, then claims the token once and seals the access URL', async () => {
    token = bridge.issueSetupToken();
    const shown = await claim({ setupToken: token });
    expect(shown).toMatchObject({ status: 200, body: { status: 'confirm', claimHost: new URL(bridge.url).host, https: false } });
    expect(claimPosts()).toBe(0);

    const claimed = await claim({ setupToken: token, confirmHost: new URL(bridge.url).host });
    expect(claimed.status).toBe(200);
    const connections = claimed.body.connections as Array<{ id: string; sector: string; provider: string }>;
    // Spec 2.5: one connection holding every bank linked at the bridge.
    expect(connections).toMatchObject([{ sector: 'finance', provider: 'simplefin' }]);
    connectionId = connections[0]?.id ?? '';
    expect(claimPosts()).toBe(1);
    const sealed = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
      SELECT s.credentials FROM sign_ins s JOIN connections c ON c.sign_in_id = s.id WHERE c.id = ${connectionId}::uuid`);
    expect(sealed.toString('latin1')).not.toContain('/simplefin');
  });

  it('never sends a setup token twice, and says plainly when the bridge refuses one', async () => {
    const again = await claim({ setupToken: token, confirmHost: new URL(bridge.url).host });
    expect(again).toMatchObject({ status: 409, body: { code: 'already_claimed', error: SETUP_TOKEN_USED } });
    expect(claimPosts()).toBe(1);

    const stolen = bridge.issueSetupToken();
    expect((await fetch(Buffer.from(stolen, 'base64').toString(), { method: 'POST' })).status).toBe(200);
    const refused = await claim({ setupToken: stolen, confirmHost: new URL(bridge.url).host });
    expect(refused).toMatchObject({ status: 403, body: { code: 'token_refused', error: SETUP_TOKEN_REFUSED } });
    expect(SETUP_TOKEN_REFUSED).toMatch(/compromise/);
  });

  it('refuses a claim address that is not https, and a host other than the one confirmed', async () => {
    const plain = Buffer.from('http://bridge.example/simplefin/claim/abc').toString('base64');
    const before = claimPosts();
    expect(await claim({ setupToken: plain, confirmHost: 'bridge.example' })).toMatchObject({ status: 422, body: { error: expect.stringContaining('https') } });
    expect(await claim({ setupToken: bridge.issueSetupToken(), confirmHost: 'elsewhere.example' })).toMatchObject({ status: 409 });
    expect(claimPosts()).toBe(before);
  });

  it('syncs every bank with Basic auth, amounts as exact decimals, money leaving negative, epoch seconds as dates', async () => {
    await waitFor(async () => ((await lastSynced(connectionId)) ? true : undefined), 15_000, 'the first sync');
    const [asked] = syncRequests(bridge);
    expect(asked?.basicUser).toMatch(/^user/);
    expect(asked?.query.get('pending')).toBe('1');
    const accounts = await rowsOf('finance.account');
    expect(accounts.map((row) => row.institution_domain).sort()).toEqual(['ally.com', 'chase.com']);
    const checking = accounts.find((row) => row.institution_domain === 'chase.com');
    expect(checking).toMatchObject({ mask: '4821', balance_current: '4812.33', balance_available: '4712.33', currency: 'USD' });
    const transactions = await rowsOf('finance.transaction');
    // Keyed by bridge connection and account id (the double names a bank's one connection CON-<domain>).
    const groceries = transactions.find((row) => row.source_id === 'CON-chase.com/ACT-chase-chk:TRN-1');
    const chase = bridge.accounts.get('ACT-chase-chk');
    const posted = chase?.transactions.find((tx) => tx.id === 'TRN-1')?.posted ?? 0;
    expect(groceries).toMatchObject({ amount: '-54.20', account_id: checking?.id, posted_on: new Date(posted * 1000).toISOString().slice(0, 10), pending: false });
    expect(transactions.find((row) => row.source_id === 'CON-chase.com/ACT-chase-chk:TRN-2')?.amount).toBe('3850.00');
    expect(transactions.find((row) => row.source_id === 'CON-chase.com/ACT-chase-chk:TRN-3')).toMatchObject({ pending: true, posted_on: null });
  });

  it('asks the bridge at most once an hour, whatever the interval', async () => {
    const before = bridge.accountRequests().length;
    const at = await lastSynced(connectionId);
    await syncNow(connectionId);
    expect(bridge.accountRequests().length).toBe(before);
    expect(await lastSynced(connectionId)).toBe(at);
  });

  it('keeps an account whose bank failed to answer, and shows the escaped errors in the health', async () => {
    bridge.removeAccount('ACT-ally-sav');
    bridge.setErrors(['<b>Ally Bank</b> did not answer']);
    await askedLongAgo(connectionId);
    await syncNow(connectionId);
    expect((await rowsOf('finance.account')).map((row) => row.institution_domain).sort()).toEqual(['ally.com', 'chase.com']);
    const mine = (await context()).connections.find((row) => row.id === connectionId);
    expect(mine).toMatchObject({ health: 'error', health_reason: 'the bridge reported: &lt;b&gt;Ally Bank&lt;/b&gt; did not answer' });
  });

  it('removes a bank that disappeared at the bridge, with its transactions, once the answer carries no errors', async () => {
    bridge.setErrors([]);
    await askedLongAgo(connectionId);
    await syncNow(connectionId);
    expect((await rowsOf('finance.account')).map((row) => row.institution_domain)).toEqual(['chase.com']);
    const left = (await rowsOf('finance.transaction')).map((row) => row.source_id);
    expect(left).toContain('CON-chase.com/ACT-chase-chk:TRN-1');
    expect(left).not.toContain('CON-ally.com/ACT-ally-sav:TRN-9');
    expect((await context()).connections.find((row) => row.id === connectionId)).toMatchObject({ health: 'ok', health_reason: null });
  });

  it('maps a 402 to needs sign-in with the reason an agent reads', async () => {
    bridge.state.paymentRequired = true;
    await askedLongAgo(connectionId);
    await syncNow(connectionId);
    expect((await context()).connections.find((row) => row.id === connectionId)).toMatchObject({
      status: 'needs_sign_in',
      health: 'needs_sign_in',
      health_reason: `${BRIDGE_PAYMENT_REQUIRED}; sign in again`,
    });
    expect((await rowsOf('finance.account')).length).toBe(1);
  });

  it('shows each finance connection\'s health and reason in the finance objects\' get_schema notes', async () => {
    const schema = (await (await fetch(`${consoleService.address}/api/operator/schema?sector=finance`)).json()) as { objects: Array<{ name: string; notes: string[] }> };
    const notes = schema.objects.find((object) => object.name === 'finance.transaction')?.notes ?? [];
    expect(notes).toContain(`Finance connection ${connectionId} (simplefin): health needs_sign_in (${BRIDGE_PAYMENT_REQUIRED}; sign in again).`);
  });
});

const DAY_S = 86_400;
const nowS = () => Math.floor(Date.now() / 1000);
const connectionRow = (id: string) =>
  testEnv.db.one(sql.type(z.object({ status: z.string(), last_error: z.string().nullable(), sync_cursor: z.unknown() }))`SELECT status, last_error, sync_cursor FROM connections WHERE id = ${id}::uuid`);
const storedTransactions = (id: string) =>
  testEnv.db.any(sql.type(z.object({ source_id: z.string(), amount: z.string(), account_id: z.string().nullable() }))`
    SELECT source_id, amount::text AS amount, account_id FROM finance_transactions WHERE connection_id = ${id}::uuid ORDER BY source_id`);
const storedAccounts = (id: string) =>
  testEnv.db.any(sql.type(z.object({ id: z.string(), source_id: z.string(), name: z.string().nullable(), institution_name: z.string().nullable(), institution_domain: z.string().nullable() }))`
    SELECT id, source_id, name, institution_name, institution_domain FROM finance_accounts WHERE connection_id = ${id}::uuid ORDER BY source_id`);

/** Claims a new setup token of `target` and waits for the connection's first sync to end, done or failed. */
async function connect(target: SimplefinDouble): Promise<string> {
  const claimed = await claim({ setupToken: target.issueSetupToken(), confirmHost: new URL(target.url).host });
  expect(claimed.status).toBe(200);
  const id = (claimed.body.connections as Array<{ id: string }>)[0]?.id ?? '';
  await waitFor(async () => {
    const row = await connectionRow(id);
    return row.sync_cursor !== null || row.last_error !== null ? true : undefined;
  }, 15_000, 'the first sync');
  return id;
}
/** The last sync asked the bridge `gapDays` ago (a cursor of before: no `fetchedThrough`). */
async function lastAskedDaysAgo(id: string, gapDays: number): Promise<void> {
  await testEnv.db.query(sql.unsafe`
    UPDATE connections SET sync_cursor = jsonb_build_object('requestedAt', (extract(epoch FROM now()) * 1000)::bigint - ${gapDays * DAY_S * 1000}::bigint) WHERE id = ${id}::uuid`);
}
/** Each request's span as the bridge measures it: end-date (or the time it was asked) minus start-date. */
const spansOf = (requests: ReturnType<SimplefinDouble['accountRequests']>) =>
  requests.map((request) => (Number(request.query.get('end-date') ?? Math.floor(request.at / 1000)) - Number(request.query.get('start-date'))) / DAY_S);

function bankAccount(fields: Partial<BridgeAccount> & Pick<BridgeAccount, 'id' | 'name'>, posted: number[]): BridgeAccount {
  return {
    org: { domain: 'gapbank.example', name: 'Gap Bank', 'sfin-url': 'https://bridge.example/simplefin' },
    currency: 'USD',
    balance: '100.00',
    'balance-date': nowS(),
    transactions: posted.map((daysAgo) => ({ id: `T-${daysAgo}`, posted: nowS() - daysAgo * DAY_S, amount: `-${daysAgo}.00`, description: `purchase ${daysAgo} days ago` })),
    ...fields,
  };
}

// Issue 31 item 10: the Bridge serves at most 90 days a request (and advises 45); it answers v2 (connections,
// conn_id, no org) when asked with version=2, as its developer guide asks; account ids are unique only within a connection.
describe('the bridge windows and answers', () => {
  let gapBridge: SimplefinDouble;
  let id = '';
  beforeAll(async () => {
    gapBridge = await startSimplefinDouble({ accounts: [bankAccount({ id: 'ACT-gap', name: 'Gap Checking ••3141' }, [2, 40, 80, 100, 250])] });
  });
  afterAll(async () => {
    await gapBridge?.close();
  });

  it('asks the first 88 days as v2 in requests the bridge serves whole, so nothing is capped, and reads the institution from the connection entry', async () => {
    id = await connect(gapBridge);
    const asked = syncRequests(gapBridge);
    expect(asked.map((request) => request.query.get('version'))).toEqual(asked.map(() => '2'));
    for (const span of spansOf(asked)) expect(span).toBeLessThanOrEqual(45);
    expect(Math.min(...asked.map((request) => Number(request.query.get('start-date'))))).toBeLessThanOrEqual(nowS() - 87 * DAY_S);
    expect(asked.at(-1)?.query.has('end-date')).toBe(false);
    expect((await context()).connections.find((row) => row.id === id)).toMatchObject({ status: 'active', health: 'ok', health_reason: null });
    // The v2 answer has no org: the institution comes from its connection entry (org_name, org_url).
    expect(await storedAccounts(id)).toMatchObject([{ source_id: 'CON-gapbank.example/ACT-gap', institution_name: 'Gap Bank', institution_domain: 'gapbank.example', name: 'Gap Checking ••3141' }]);
    expect((await storedTransactions(id)).map((row) => row.amount).sort()).toEqual(['-2.00', '-40.00', '-80.00']);
  });

  it('after a gap of 120 days fetches every day of it, in requests of at most 45 days, and reaches now', async () => {
    await lastAskedDaysAgo(id, 120);
    const from = gapBridge.accountRequests().length;
    await syncNow(id);
    const asked = gapBridge.accountRequests().slice(from);
    expect(asked.length).toBeGreaterThanOrEqual(3);
    for (const span of spansOf(asked)) expect(span).toBeLessThanOrEqual(45);
    expect((await storedTransactions(id)).map((row) => row.amount).sort()).toEqual(['-100.00', '-2.00', '-40.00', '-80.00']);
    const cursor = (await connectionRow(id)).sync_cursor as { fetchedThrough: number };
    expect(cursor.fetchedThrough).toBeGreaterThan(Date.now() - 60 * 60_000);
    expect((await context()).connections.find((row) => row.id === id)).toMatchObject({ health: 'ok' });
  });

  it('after a gap of 300 days moves the cursor only as far as it fetched, and the next sync fetches the rest', async () => {
    await lastAskedDaysAgo(id, 300);
    await syncNow(id);
    const partial = (await connectionRow(id)).sync_cursor as { requestedAt: number; fetchedThrough: number };
    expect(partial.fetchedThrough).toBeLessThan(Date.now() - 100 * DAY_S * 1000);
    expect((await storedTransactions(id)).map((row) => row.amount)).toContain('-250.00');
    await testEnv.db.query(sql.unsafe`
      UPDATE connections SET sync_cursor = jsonb_set(sync_cursor, '{requestedAt}', to_jsonb((extract(epoch FROM now()) * 1000)::bigint - 7200000)) WHERE id = ${id}::uuid`);
    const from = gapBridge.accountRequests().length;
    await syncNow(id);
    const resumed = gapBridge.accountRequests().slice(from);
    expect(Number(resumed[0]?.query.get('start-date'))).toBeLessThanOrEqual(partial.fetchedThrough / 1000);
    expect(resumed.at(-1)?.query.has('end-date')).toBe(false);
    expect(((await connectionRow(id)).sync_cursor as { fetchedThrough: number }).fetchedThrough).toBeGreaterThan(Date.now() - 60 * 60_000);
    expect((await storedTransactions(id)).map((row) => row.amount).sort()).toEqual(['-100.00', '-2.00', '-250.00', '-40.00', '-80.00']);
  });

  it('keeps two logins at one bank apart when both list the same account id, each with its own transactions', async () => {
    const twins = await startSimplefinDouble({
      accounts: [
        bankAccount({ conn_id: 'CON-jim', id: '1', name: 'Checking ••1111', org: { domain: 'twinbank.example', name: 'Twin Bank', 'sfin-url': 'https://bridge.example/simplefin' } }, [3]),
        bankAccount({ conn_id: 'CON-jill', id: '1', name: 'Checking ••2222', org: { domain: 'twinbank.example', name: 'Twin Bank', 'sfin-url': 'https://bridge.example/simplefin' } }, [3]),
      ],
    });
    try {
      twins.updateTransaction('CON-jill/1', 'T-3', { amount: '-7.00' });
      const twinId = await connect(twins);
      expect((await connectionRow(twinId)).status).toBe('active');
      const accounts = await storedAccounts(twinId);
      expect(accounts.map((row) => [row.source_id, row.name])).toEqual([
        ['CON-jill/1', 'Checking ••2222'],
        ['CON-jim/1', 'Checking ••1111'],
      ]);
      const byAccount = new Map(accounts.map((row) => [row.id, row.name]));
      expect((await storedTransactions(twinId)).map((row) => [row.source_id, row.amount, byAccount.get(row.account_id ?? '')])).toEqual([
        ['CON-jill/1:T-3', '-7.00', 'Checking ••2222'],
        ['CON-jim/1:T-3', '-3.00', 'Checking ••1111'],
      ]);
    } finally {
      await twins.close();
    }
  });
});

// Issue 31 item 16: the bridge guide fetches with `curl -L "${ACCESS_URL}/accounts?version=2"`: redirects are
// followed, and (as curl does without --location-trusted) the credentials go only to the access URL's origin.
describe('redirects of the bridge', () => {
  let moving: SimplefinDouble;
  let elsewhere: SimplefinDouble;
  beforeAll(async () => {
    moving = await startSimplefinDouble({ accounts: [bankAccount({ id: 'ACT-moved', name: 'Moved Savings ••2718', org: { domain: 'movedbank.example', name: 'Moved Bank', 'sfin-url': 'https://bridge.example/simplefin' } }, [1])] });
    elsewhere = await startSimplefinDouble({ accounts: [] });
  });
  afterAll(async () => {
    await moving?.close();
    await elsewhere?.close();
  });

  it('follows a redirect within the access URL\'s origin with the Basic credentials, and syncs', async () => {
    moving.redirectAccounts(`${moving.url}/moved/simplefin/accounts`, 307);
    const id = await connect(moving);
    const first = syncRequests(moving)[0];
    const moved = moving.requests.find((request) => request.path === '/moved/simplefin/accounts');
    expect(first?.basicUser).toMatch(/^user/);
    expect(moved).toMatchObject({ path: '/moved/simplefin/accounts', basicUser: first?.basicUser });
    expect(moved?.query.get('version')).toBe('2');
    expect(await connectionRow(id)).toMatchObject({ status: 'active', last_error: null });
    expect((await storedTransactions(id)).map((row) => row.amount)).toEqual(['-1.00']);
  });

  it('follows a redirect to another origin without the credentials, and says where the refusal came from', async () => {
    moving.redirectAccounts(null);
    const id = await connect(moving);
    moving.redirectAccounts(`${elsewhere.url}/simplefin/accounts`);
    await lastAskedDaysAgo(id, 1);
    await syncNow(id);
    const arrived = elsewhere.accountRequests();
    expect(arrived).toHaveLength(1);
    expect(arrived[0]).toMatchObject({ basicUser: null, authorization: null });
    expect(arrived[0]?.query.get('version')).toBe('2');
    const row = await connectionRow(id);
    expect(row).toMatchObject({ status: 'needs_sign_in', last_error: expect.stringContaining(new URL(elsewhere.url).origin) });
    expect((await storedTransactions(id)).map((stored) => stored.amount)).toEqual(['-1.00']);
  });
});

describe('bridge account keys', () => {
  const account = (conn_id: string, id: string): BridgeAccount & { transactions: [] } => ({
    org: { domain: 'bank.example', 'sfin-url': 'https://bridge.example/simplefin' },
    conn_id,
    id,
    name: id,
    currency: 'USD',
    balance: '1.00',
    'balance-date': 0,
    transactions: [],
  });

  it('gives a row cached before the migration to the one account answered with its id, and keeps it there when a second login lists the same id', () => {
    const jim = account('CON-jim', 'ACT 1');
    const first = accountKeys([jim], new Set(['%/ACT%201']), {});
    expect(first.keys.get(jim)).toBe('%/ACT%201');
    expect(first.claims).toEqual({ '%/ACT%201': 'CON-jim/ACT%201' });
    const jill = account('CON-jill', 'ACT 1');
    const later = accountKeys([jill, jim], new Set(['%/ACT%201']), first.claims);
    expect([later.keys.get(jim), later.keys.get(jill)]).toEqual(['%/ACT%201', 'CON-jill/ACT%201']);
  });

  it('gives such a row to no one when two logins list its id at once', () => {
    const [jim, jill] = [account('CON-jim', '1'), account('CON-jill', '1')];
    const { keys, claims } = accountKeys([jim, jill], new Set(['%/1']), {});
    expect([keys.get(jim), keys.get(jill)]).toEqual(['CON-jim/1', 'CON-jill/1']);
    expect(claims).toEqual({});
  });
});

describe('the bridge errors of a window of several requests', () => {
  it('shows each error the bridge reported once, though every request of the first sync repeated it', async () => {
    const failing = await startSimplefinDouble({ accounts: [bankAccount({ id: 'ACT-err', name: 'Err Checking ••1618', org: { domain: 'errbank.example', name: 'Err Bank', 'sfin-url': 'https://bridge.example/simplefin' } }, [1])] });
    try {
      failing.setErrors(['Err Bank did not answer']);
      const id = await connect(failing);
      expect(failing.accountRequests().length).toBeGreaterThan(1);
      expect((await context()).connections.find((row) => row.id === id)).toMatchObject({ health: 'error', health_reason: 'the bridge reported: Err Bank did not answer' });
    } finally {
      await failing.close();
    }
  });
});
