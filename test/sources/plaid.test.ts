import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { createOriginRebaser } from '@pcg/shared/providers';
import { blockingConnection, openSyncProducer } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { demoAggregatorItem, startPlaidDouble, startSimplefinDouble, type PlaidDouble, type SimplefinDouble } from '@pcg/testkit/doubles';
import { consoleSender, createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { plaidAppLoader } from '../../services/sync-worker/src/connectors/plaid/plaid-app.ts';
import { defaultConnectors } from '../../services/sync-worker/src/connectors/registry.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// The bank aggregator end to end (issue 16): the application saved in the Console, the hosted link
// started from the Console and completed without a browser, the public token exchanged on the
// sync-worker, the paged transactions sync, a login repaired in update mode, and what an agent reads.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
let aggregator: PlaidDouble;
let bridge: SimplefinDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let queue: Queue;
let agentKey: string;
const logs: Array<() => string[]> = [];
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
/** Small pages, so a sync of the demo bank takes several `/transactions/sync` calls. */
const PAGE_SIZE = 2;

const send = consoleSender(() => consoleService.address);
const rowsOf = async (object: string, connectionId: string) =>
  ((await send('POST', '/api/data/finance', { object, where: [{ field: 'connection_id', op: 'eq', value: connectionId }], limit: 200 })).body as { rows: Array<Record<string, unknown>> }).rows;
/** Rows a connection stored, merged duplicates included (the read path shows a merged account once). */
const storedCount = (table: 'finance_accounts' | 'finance_transactions' | 'finance_holdings', connectionId: string) =>
  testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM ${sql.identifier([table])} WHERE connection_id = ${connectionId}::uuid`);
const connectionRow = (id: string) =>
  testEnv.db.one(sql.type(z.object({ status: z.string(), last_error: z.string().nullable(), sync_cursor: z.unknown() }))`SELECT status, last_error, sync_cursor FROM connections WHERE id = ${id}::uuid`);
const agentContext = async () =>
  (await (await fetch(`${consoleService.address}/api/context`, { headers: { authorization: `Bearer ${agentKey}` } })).json()) as { sectors: string[]; connections: Array<Record<string, unknown>> };

async function syncNow(id: string): Promise<{ state: string; attempts: number }> {
  const jobId = await producer.requestSync(id);
  let state = '';
  await waitFor(async () => (['completed', 'failed'].includes((state = await queue.getJobState(jobId))) ? true : undefined), 20_000, `sync ${jobId}`);
  return { state, attempts: (await queue.getJob(jobId))?.attemptsMade ?? 0 };
}

/**
 * The operator's path through a hosted link: `start` answers the aggregator's hosted page; the person
 * links the bank there (the double's test endpoint stands in for the browser) and is sent back to the
 * Console's callback, which the same browser (its cookie) opens.
 */
async function linkThroughConsole(signInId?: string) {
  const started = await send('GET', `/api/connect/plaid/start${signInId ? `?signInId=${signInId}` : ''}`);
  expect(started.status, JSON.stringify(started.body)).toBe(302);
  const hosted = new URL(started.headers.get('location') ?? '');
  expect(hosted.origin).toBe(aggregator.url);
  const cookie = (started.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const linkToken = decodeURIComponent(hosted.pathname.split('/').at(-1) ?? '');
  const completed = (await (await fetch(`${aggregator.url}/test/link/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link_token: linkToken }) })).json()) as {
    redirect: string;
  };
  const back = new URL(completed.redirect);
  expect(back.pathname).toBe('/api/connect/plaid/callback');
  return send('GET', `${back.pathname}${back.search}`, undefined, { cookie });
}

beforeAll(async () => {
  aggregator = await startPlaidDouble();
  bridge = await startSimplefinDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', SIMPLEFIN_ALLOW_LOOPBACK: 'true', PLAID_BASE_URL: aggregator.url });
  const config = loadConfig(syncWorkerConfigSchema, env);
  const connectors = defaultConnectors(createOriginRebaser(config), { plaid: { loadApp: plaidAppLoader(testEnv.db, key), pageSize: PAGE_SIZE } });
  const workerLog = createCapturingLogger('sync-worker');
  const consoleLog = createCapturingLogger('console');
  logs.push(workerLog.lines, consoleLog.lines);
  worker = await startSyncWorker(config, workerLog.log, { connectors });
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), consoleLog.log, { audit: { record: () => undefined } });
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'plaid-test'), prefix: bullmqPrefix(settings()) });
  agentKey = await createTestAgent(testEnv.db, { name: 'finance-only', sectors: ['finance'] });
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await producer?.close();
  await queue?.close();
  await aggregator?.close();
  await bridge?.close();
});

describe('the bank aggregator', () => {
  let connectionId = '';
  let signInId = '';
  let itemId = '';

  it('saves the application credentials with their environment, write-only', async () => {
    const app = { clientId: aggregator.app.clientId, clientSecret: aggregator.app.secret };
    expect(await send('PUT', '/api/connect/plaid/app', app)).toMatchObject({ status: 400, body: { error: expect.stringContaining('sandbox or production') } });
    expect((await send('PUT', '/api/connect/plaid/app', { ...app, clientSecret: 'secret€', environment: 'sandbox' })).status).toBe(400);
    expect((await send('PUT', '/api/connect/plaid/app', { ...app, environment: 'sandbox' })).status).toBe(204);
    // An environment belongs to a hosted-link provider only.
    expect(await send('PUT', '/api/connect/microsoft/app', { ...app, environment: 'sandbox' })).toMatchObject({ status: 400, body: { error: expect.stringContaining('takes no environment') } });
    const providers = (await send('GET', '/api/providers')).body as { providers: Array<Record<string, unknown>> };
    const plaid = providers.providers.find((provider) => provider.kind === 'plaid');
    expect(plaid).toMatchObject({ signIn: 'link', link: { appSaved: true, environments: ['sandbox', 'production'], callbackPath: '/api/connect/plaid/callback' } });
    expect(JSON.stringify(providers)).not.toContain(aggregator.app.secret);
  });

  it('links a bank through the hosted link and seals the access token on the sign-in', async () => {
    const linked = await linkThroughConsole();
    expect(linked.status).toBe(200);
    expect(linked.body).toMatchObject({ status: 'signed_in', renewed: false, connections: [{ provider: 'plaid', sector: 'finance', displayName: 'Chase (Bank aggregator (Plaid))' }] });
    connectionId = (linked.body.connections as Array<{ id: string }>)[0]?.id ?? '';
    signInId = String(linked.body.signInId);
    const [item] = aggregator.items();
    itemId = item?.itemId ?? '';
    const sealed = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`SELECT credentials FROM sign_ins WHERE id = ${signInId}::uuid`);
    expect(sealed.toString('latin1')).not.toContain(item?.accessToken ?? 'access-');
    // The application's credentials ride in the headers, never in a body the aggregator could log.
    expect(aggregator.requests.filter((request) => request.path === '/item/public_token/exchange').map((request) => request.credentialsIn)).toEqual(['headers']);
  });

  it('syncs accounts with balances, holdings, and transactions with the sign flipped on the exact decimal', async () => {
    // The cursor is stored once the whole sync is written: counting rows could catch it half way.
    await waitFor(async () => ((await connectionRow(connectionId)).sync_cursor !== null ? true : undefined), 20_000, 'the first sync');
    const accounts = await rowsOf('finance.account', connectionId);
    const checking = accounts.find((row) => row.mask === '4821');
    expect(checking).toMatchObject({ institution_name: 'Chase', institution_domain: 'chase.com', type: 'depository', subtype: 'checking', balance_current: '4812.33', balance_available: '4712.33', currency: 'USD' });
    expect(accounts.find((row) => row.mask === '1190')).toMatchObject({ balance_current: '612.4', balance_limit: '10000' });
    const transactions = await rowsOf('finance.transaction', connectionId);
    const bySource = new Map(transactions.map((row) => [row.source_id, row]));
    // The aggregator's positive amount is money leaving: a purchase lands negative, pay and a refund positive.
    expect(bySource.get('tx-wf-1')).toMatchObject({ amount: '-54.2', account_id: checking?.id, merchant_name: 'Whole Foods', category: 'groceries', provider_category: 'FOOD_AND_DRINK_GROCERIES', pending: false });
    expect(bySource.get('tx-pay-1')?.amount).toBe('3850');
    expect(bySource.get('tx-ref-1')?.amount).toBe('19.99');
    expect(bySource.get('tx-fee-1')?.amount).toBe('-0.1');
    expect(bySource.get('tx-cof-1')).toMatchObject({ amount: '-12.75', pending: true, posted_on: null });
    const holdings = await rowsOf('finance.holding', connectionId);
    expect(holdings.find((row) => row.ticker === 'VTI')).toMatchObject({ quantity: '96', price: '231.07', value: '22182.72', cost_basis: '18000.01' });
    // Three pages of two: one loop, its final cursor saved.
    expect(aggregator.syncRequests().map((request) => request.cursor === null)).toEqual([true, false, false]);
    expect(await connectionRow(connectionId)).toMatchObject({ status: 'active', sync_cursor: { transactions: expect.any(String) } });
  });

  it('syncs from the saved cursor: an added, a modified and a removed transaction', async () => {
    const cursor = ((await connectionRow(connectionId)).sync_cursor as { transactions: string }).transactions;
    aggregator.addTransaction(itemId, { transaction_id: 'tx-new-1', account_id: 'acc-chk-4821', amount: 8, name: 'PARKING' });
    aggregator.modifyTransaction(itemId, 'tx-wf-1', { amount: 55.2 });
    aggregator.removeTransaction(itemId, 'tx-ref-1');
    const from = aggregator.syncRequests().length;
    expect((await syncNow(connectionId)).state).toBe('completed');
    expect(aggregator.syncRequests().slice(from).map((request) => request.cursor)).toEqual([cursor, expect.any(String)]);
    const bySource = new Map((await rowsOf('finance.transaction', connectionId)).map((row) => [row.source_id, row]));
    expect(bySource.get('tx-new-1')?.amount).toBe('-8');
    expect(bySource.get('tx-wf-1')?.amount).toBe('-55.2');
    expect(bySource.has('tx-ref-1')).toBe(false);
    expect(bySource.size).toBe(5);
  });

  it('restarts the whole loop from its first cursor when the data changes during paging', async () => {
    for (const n of [1, 2, 3]) aggregator.addTransaction(itemId, { transaction_id: `tx-batch-${n}`, account_id: 'acc-chk-4821', amount: n, name: `BATCH ${n}` });
    aggregator.mutateDuringNextPagination(itemId);
    const start = ((await connectionRow(connectionId)).sync_cursor as { transactions: string }).transactions;
    const from = aggregator.syncRequests().length;
    expect((await syncNow(connectionId)).state).toBe('completed');
    const calls = aggregator.syncRequests().slice(from);
    const failed = calls.findIndex((request) => request.status === 400);
    expect(failed).toBe(1);
    // The page after the failure asks again from the cursor that started the loop, not from the failed page's.
    expect(calls[0]?.cursor).toBe(start);
    expect(calls[2]?.cursor).toBe(start);
    const ids = (await rowsOf('finance.transaction', connectionId)).map((row) => row.source_id);
    expect(ids).toEqual(expect.arrayContaining(['tx-batch-1', 'tx-batch-2', 'tx-batch-3']));
    expect(ids.filter((id) => String(id).startsWith('tx-mid-'))).toHaveLength(1);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('waits out a per-item 429 without using an attempt', async () => {
    aggregator.rateLimitNext(itemId, { retryAfter: '1' });
    const from = aggregator.requests.length;
    const run = await syncNow(connectionId);
    expect(run).toMatchObject({ state: 'completed', attempts: 1 });
    const [limited, retried] = aggregator.requests.slice(from);
    expect(limited?.status).toBe(429);
    expect((retried?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(950);
    expect(await connectionRow(connectionId)).toMatchObject({ status: 'active', last_error: null });
  });

  it('marks a login the bank wants repaired as needs sign-in with the reason, and keeps every row', async () => {
    const before = (await rowsOf('finance.transaction', connectionId)).map((row) => row.id).sort();
    aggregator.requireLogin(itemId);
    expect((await syncNow(connectionId)).state).toBe('failed');
    expect(await connectionRow(connectionId)).toMatchObject({ status: 'needs_sign_in', last_error: expect.stringContaining('ITEM_LOGIN_REQUIRED') });
    const mine = (await agentContext()).connections.find((row) => row.id === connectionId);
    expect(mine).toMatchObject({ health: 'needs_sign_in', health_reason: expect.stringContaining('ITEM_LOGIN_REQUIRED') });
    expect((await rowsOf('finance.transaction', connectionId)).map((row) => row.id).sort()).toEqual(before);
  });

  it('repairs the login in update mode on the same sign-in, every cached row kept', async () => {
    const before = (await rowsOf('finance.transaction', connectionId)).map((row) => row.id).sort();
    const accountsBefore = (await rowsOf('finance.account', connectionId)).map((row) => row.id).sort();
    const repaired = await linkThroughConsole(signInId);
    expect(repaired).toMatchObject({ status: 200, body: { status: 'signed_in', renewed: true, signInId, connections: [{ id: connectionId, status: 'active' }] } });
    expect(aggregator.requests.filter((request) => request.path === '/link/token/create').map((request) => request.updateMode)).toEqual([false, true]);
    // Update mode links no new item: there is still one, and no second public token was exchanged.
    expect(aggregator.items()).toHaveLength(1);
    expect(aggregator.requests.filter((request) => request.path === '/item/public_token/exchange')).toHaveLength(1);
    expect((await rowsOf('finance.transaction', connectionId)).map((row) => row.id).sort()).toEqual(before);
    expect((await syncNow(connectionId)).state).toBe('completed');
    expect(await connectionRow(connectionId)).toMatchObject({ status: 'active', last_error: null });
    expect((await rowsOf('finance.transaction', connectionId)).map((row) => row.id).sort()).toEqual(before);
    expect((await rowsOf('finance.account', connectionId)).map((row) => row.id).sort()).toEqual(accountsBefore);
  });

  // Issue 31 item 14: Plaid's Item errors page asks the person to act at the bank, then link again in update mode.
  it('asks the person, never retries, when the bank wants its own setup finished (USER_SETUP_REQUIRED), and syncs again once the link is repaired', async () => {
    aggregator.setItemError(itemId, 'USER_SETUP_REQUIRED');
    expect(await syncNow(connectionId)).toMatchObject({ state: 'failed', attempts: 1 });
    const row = await connectionRow(connectionId);
    expect(row).toMatchObject({ status: 'needs_sign_in', last_error: expect.stringContaining('USER_SETUP_REQUIRED') });
    expect(row.last_error).toContain('log in at the bank');
    const mine = (await agentContext()).connections.find((candidate) => candidate.id === connectionId);
    expect(mine).toMatchObject({ health: 'needs_sign_in', health_reason: expect.stringContaining('USER_SETUP_REQUIRED') });
    expect(await linkThroughConsole(signInId)).toMatchObject({ status: 200, body: { renewed: true, connections: [{ id: connectionId, status: 'active' }] } });
    expect((await syncNow(connectionId)).state).toBe('completed');
    expect(await connectionRow(connectionId)).toMatchObject({ status: 'active', last_error: null });
  });

  it("gives an agent granted only finance each finance connection's health and the consent expiry", async () => {
    const context = await agentContext();
    expect(context.sectors).toEqual(['finance']);
    const mine = context.connections.find((row) => row.id === connectionId);
    const expiry = (await rowsOf('finance.account', connectionId))[0]?.consent_expires_at;
    expect(typeof expiry).toBe('string');
    expect(mine).toMatchObject({ provider: 'plaid', health: 'ok', health_reason: null, consent_expires_at: expiry });
  });

  it('states the money convention and each finance connection in the get_schema notes', async () => {
    const schema = (await (await fetch(`${consoleService.address}/api/schema?sector=finance`, { headers: { authorization: `Bearer ${agentKey}` } })).json()) as {
      objects: Array<{ name: string; notes: string[]; fieldDocs?: Record<string, string> }>;
    };
    const transaction = schema.objects.find((object) => object.name === 'finance.transaction');
    const expiry = String((await rowsOf('finance.account', connectionId))[0]?.consent_expires_at).slice(0, 10);
    expect(transaction?.notes).toContain(`Finance connection ${connectionId} (plaid): health ok; the bank's consent expires ${expiry}.`);
    expect(transaction?.notes.join(' ')).toMatch(/Plaid.*positive.*leaving.*SimpleFIN.*positive.*entering/s);
    expect(transaction?.fieldDocs?.amount).toMatch(/Negative = money out/);
  });

  it("starts with an empty cursor while the bank's first data is not ready, then syncs in full", async () => {
    aggregator.state.startNotReady = true;
    const linked = await linkThroughConsole();
    aggregator.state.startNotReady = false;
    const id = (linked.body.connections as Array<{ id: string }>)[0]?.id ?? '';
    const newest = aggregator.items().at(-1)?.itemId ?? '';
    await waitFor(async () => ((await connectionRow(id)).sync_cursor !== null ? true : undefined), 20_000, 'the first sync');
    expect((await connectionRow(id)).sync_cursor).toEqual({});
    // A second link of the same bank is a duplicate account agents see once (spec 2.1), so the stored rows are counted here.
    expect(await storedCount('finance_transactions', id)).toBe(0);
    expect(await storedCount('finance_accounts', id)).toBe(3);
    aggregator.markReady(newest);
    expect((await syncNow(id)).state).toBe('completed');
    expect(await storedCount('finance_transactions', id)).toBe(5);
    // Matched one by one with the first link's (design 8.3): read once, except the two the first link no
    // longer has as they are here (tx-wf-1 modified to 55.20 there, tx-ref-1 removed there).
    expect((await rowsOf('finance.transaction', id)).map((row) => row.source_id).sort()).toEqual(['tx-ref-1', 'tx-wf-1']);
  });

  // Issue 31 item 5: asked of an item without the Investments product (or without consent to it), Plaid
  // answers PRODUCTS_NOT_SUPPORTED (or ADDITIONAL_CONSENT_REQUIRED); the sync must not ask, and not fail.
  it.each([
    ['without the Investments product', { products: ['transactions'] }],
    ['without consent to Investments', { consentedProducts: ['transactions'] }],
  ])('syncs a bank %s in full, with its brokerage account, and never asks it for holdings', async (_, variant) => {
    aggregator.state.nextSeed = { ...demoAggregatorItem(), ...variant };
    const linked = await linkThroughConsole();
    const id = (linked.body.connections as Array<{ id: string }>)[0]?.id ?? '';
    const token = aggregator.items().at(-1)?.accessToken ?? '';
    const settled = await waitFor(async () => {
      const row = await connectionRow(id);
      return row.sync_cursor !== null || row.last_error !== null ? row : undefined;
    }, 20_000, 'the first sync');
    expect(settled).toMatchObject({ status: 'active', last_error: null, sync_cursor: { transactions: expect.any(String) } });
    expect(await storedCount('finance_accounts', id)).toBe(3);
    expect(await storedCount('finance_transactions', id)).toBe(5);
    expect(await storedCount('finance_holdings', id)).toBe(0);
    expect(aggregator.requests.filter((request) => request.path === '/investments/holdings/get' && request.accessToken === token)).toEqual([]);
  });
});

describe('secrets of the aggregator', () => {
  it('never appear in a log line of the Console or the sync-worker: no access token, no secret, no public or link token', () => {
    const lines = logs.flatMap((read) => read()).join('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const item of aggregator.items()) expect(lines).not.toContain(item.accessToken);
    expect(lines).not.toContain(aggregator.app.secret);
    expect(lines).not.toMatch(/public-sandbox-|link-sandbox-/);
  });
});

describe('one money convention across finance sources', () => {
  it('lands the same purchase from the aggregator and the bridge with the same sign and amount', async () => {
    const token = bridge.issueSetupToken();
    const claimed = await send('POST', '/api/connect/simplefin/claim', { setupToken: token, confirmHost: new URL(bridge.url).host });
    expect(claimed.status).toBe(200);
    const bridgeId = (claimed.body.connections as Array<{ id: string }>)[0]?.id ?? '';
    await waitFor(async () => ((await rowsOf('finance.transaction', bridgeId)).length > 0 ? true : undefined), 20_000, 'the bridge sync');
    const amounts = await testEnv.db.any(sql.type(z.object({ provider: z.string(), amount: z.string(), negative: z.boolean() }))`
      SELECT c.provider, t.amount::text AS amount, t.amount < 0 AS negative
      FROM finance_transactions t JOIN connections c ON c.id = t.connection_id
      WHERE t.description = 'WHOLE FOODS #123' AND c.id IN (${bridgeId}::uuid, (SELECT id FROM connections WHERE provider = 'plaid' ORDER BY created_at DESC LIMIT 1))`);
    // The bridge sends -54.20 (its negative = money out); the aggregator 54.2 (its positive = money out).
    expect(amounts.map((row) => row.provider).sort()).toEqual(['plaid', 'simplefin']);
    expect(amounts.every((row) => row.negative)).toBe(true);
    const equal = await testEnv.db.oneFirst(sql.type(z.object({ same: z.boolean() }))`
      SELECT count(DISTINCT t.amount) = 1 AS same FROM finance_transactions t JOIN connections c ON c.id = t.connection_id
      WHERE t.description = 'WHOLE FOODS #123' AND c.id IN (${bridgeId}::uuid, (SELECT id FROM connections WHERE provider = 'plaid' ORDER BY created_at DESC LIMIT 1))`);
    expect(equal).toBe(true);
  });
});
