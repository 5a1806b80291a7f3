import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sealCredentials } from '@pcg/shared/crypto';
import { MIGRATIONS_DIR, sql } from '@pcg/shared/db';
import { CONSOLE_ACTS, type AuditEvent } from '@pcg/shared/audit';
import type { AccountMatchList, AccountMatchView } from '@pcg/shared/finance';
import { blockingConnection, openSyncProducer } from '@pcg/shared/queues';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { bullmqPrefix } from '@pcg/shared/redis';
import { startSimplefinDouble, type BridgeAccount, type SimplefinDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// Account deduplication (spec 2.1, issue 16) across two finance connections: two bridges that both
// deliver some of the same accounts. Merged when both report the same last 4; asked otherwise; the
// answer kept across syncs and a restart; a merged account read once, its spending summed once.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', SIMPLEFIN_ALLOW_LOOPBACK: 'true' });
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
const DAY_S = 86_400;
const now = Math.floor(Date.now() / 1000);

function account(id: string, domain: string, name: string, spending: string[]): BridgeAccount {
  return {
    org: { domain, name: domain, 'sfin-url': 'https://bridge.example/simplefin' },
    id,
    name,
    currency: 'USD',
    balance: '100.00',
    'balance-date': now,
    transactions: spending.map((amount, i) => ({ id: `T${i}`, posted: now - (i + 1) * DAY_S, amount, description: `purchase ${i}` })),
  };
}

// The same checking account at both bridges, both names ending in its last 4: merged without asking.
// Savings: the first bridge shows no last 4, so the operator is asked (answered "keep separate").
// Card: the second bridge shows no last 4 (answered "same account").
// Mortgage: both show a last 4 and they differ: two different accounts, never asked.
const first: BridgeAccount[] = [
  account('A-chk', 'chase.com', 'Total Checking ••4821', ['-54.20', '-12.75']),
  account('A-sav', 'ally.com', 'Online Savings', ['-5.00']),
  account('A-card', 'capitalone.com', 'Venture ••1111', ['-80.00', '-19.99']),
  account('A-mtg', 'wellsfargo.com', 'Mortgage ••2222', ['-1500.00']),
];
const second: BridgeAccount[] = [
  account('B-chk', 'www.Chase.com', 'CHASE CHECKING 4821', ['-54.20', '-12.75']),
  account('B-sav', 'ally.com', 'Savings ••7788', ['-5.00']),
  account('B-card', 'capitalone.com', 'Venture Rewards', ['-80.00', '-19.99']),
  account('B-mtg', 'wellsfargo.com', 'Mortgage ••3333', ['-900.00']),
];

let bridges: SimplefinDouble[] = [];
let consoleService: RunningConsole | undefined;
let worker: RunningSyncWorker | undefined;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let queue: Queue;
const connectionIds: string[] = [];
const audited: AuditEvent[] = [];

async function start(): Promise<void> {
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: (event) => void audited.push(event) } });
}
async function stop(): Promise<void> {
  await consoleService?.close();
  await worker?.close();
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const answer = await fetch(`${consoleService?.address}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: answer.status, body: await answer.json() };
}
const matches = async () => (await call('GET', '/api/finance/account-matches')).body as AccountMatchList;
const answer = (id: string, same: boolean) => call('POST', `/api/finance/account-matches/${id}`, { same });
const query = async (input: Record<string, unknown>) => (await call('POST', '/api/data/finance', { limit: 200, ...input })).body as { rows: Array<Record<string, unknown>> };
const accountNames = async (domain: string) =>
  (await query({ object: 'finance.account', where: [{ field: 'institution_domain', op: 'eq', value: domain }] })).rows.map((row) => row.name).sort();
const spending = async () =>
  (await query({ object: 'finance.transaction', where: [{ field: 'amount', op: 'lt', value: 0 }], aggregate: { metrics: [{ fn: 'sum', field: 'amount' }, { fn: 'count' }] } })).rows[0];
const pairOf = (list: AccountMatchList, domain: string): AccountMatchView | undefined => [...list.open, ...list.decided].find((match) => match.institutionDomain === domain);
const lastSynced = (id: string) =>
  testEnv.db.oneFirst(sql.type(z.object({ at: z.string().nullable() }))`SELECT last_synced_at::text AS at FROM connections WHERE id = ${id}::uuid`);

/** Syncs a connection now (the bridge keeps an hour between requests, so its last request is moved back) and waits for the job. */
async function syncNow(id: string, outcome: 'synced' | 'failed' = 'synced'): Promise<void> {
  await testEnv.db.query(sql.unsafe`
    UPDATE connections SET sync_cursor = jsonb_set(coalesce(sync_cursor, '{}'), '{requestedAt}', to_jsonb((extract(epoch FROM now()) * 1000)::bigint - 7200000)) WHERE id = ${id}::uuid`);
  const jobId = await producer.requestSync(id);
  await waitFor(async () => (['completed', 'failed'].includes(await queue.getJobState(jobId)) ? true : undefined), 15_000, `sync ${jobId}`);
  if (outcome === 'synced') expect((await queue.getJob(jobId))?.returnvalue).toMatchObject({ outcome: 'synced' });
  else expect(await queue.getJobState(jobId)).toBe('failed');
}

beforeAll(async () => {
  bridges = [await startSimplefinDouble({ accounts: first }), await startSimplefinDouble({ accounts: second })];
  await start();
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'dedup-test'), prefix: bullmqPrefix(settings()) });
  for (const bridge of bridges) {
    const token = bridge.issueSetupToken();
    const claimed = await call('POST', '/api/connect/simplefin/claim', { setupToken: token, confirmHost: new URL(bridge.url).host });
    expect(claimed.status).toBe(200);
    const id = (claimed.body as { connections: Array<{ id: string }> }).connections[0]?.id ?? '';
    connectionIds.push(id);
    await waitFor(async () => ((await lastSynced(id)) ? true : undefined), 15_000, 'the first sync');
  }
  // Both first syncs are done; one more sync of the first bridge pairs whatever the second brought.
  await syncNow(connectionIds[0] ?? '');
});
afterAll(async () => {
  await stop();
  await producer?.close();
  await queue?.close();
  await Promise.all(bridges.map((bridge) => bridge.close()));
});

describe('finance account deduplication', () => {
  it('merges without asking when both connections report the same last 4 at the same institution', async () => {
    const pair = pairOf(await matches(), 'chase.com');
    expect(pair).toMatchObject({
      state: 'same',
      automatic: true,
      answeredAt: null,
      // Keyed by bridge connection and account id (the doubles name a bank's connection CON-<domain>).
      first: { connectionId: connectionIds[0], sourceId: 'CON-chase.com/A-chk', lastFour: '4821' },
      second: { connectionId: connectionIds[1], sourceId: 'CON-www.Chase.com/B-chk', lastFour: '4821' },
    });
    // Agents read the earlier connection's copy only, and its transactions once.
    expect(await accountNames('chase.com')).toEqual(['Total Checking ••4821']);
    const chase = await query({ object: 'finance.transaction', where: [{ field: 'description', op: 'eq', value: 'purchase 0' }, { field: 'amount', op: 'eq', value: '-54.20' }] });
    expect(chase.rows.map((row) => row.connection_id)).toEqual([connectionIds[0]]);
    // Nor is the merged-away copy found by its id.
    expect((await call('GET', `/api/data/finance/${pair?.second.accountId}`)).status).toBe(404);
    expect((await call('GET', `/api/data/finance/${pair?.first.accountId}`)).status).toBe(200);
    expect(await answer(pair?.id ?? '', false)).toMatchObject({ status: 409, body: { error: expect.stringContaining('nothing to answer') } });
  });

  it('leaves one Console act row per answer, refused ones as errors, and none for listing', async () => {
    const answers = () => audited.filter((event) => event.tool === CONSOLE_ACTS.answerAccountMatch);
    const automatic = answers();
    expect(automatic).toMatchObject([{ agentId: 'operator', decision: 'allow', outcome: 'error', sector: 'finance' }]);
    const before = audited.length;
    await matches();
    expect(audited.length).toBe(before);
  });

  it('asks the operator when a last 4 is missing on either side, and never pairs accounts whose last 4 differ', async () => {
    const list = await matches();
    expect(list.open.map((match) => match.institutionDomain).sort()).toEqual(['ally.com', 'capitalone.com']);
    expect(pairOf(list, 'ally.com')).toMatchObject({ state: 'open', automatic: false, first: { lastFour: null }, second: { lastFour: '7788' } });
    expect(pairOf(list, 'capitalone.com')).toMatchObject({ state: 'open', first: { lastFour: '1111' }, second: { lastFour: null } });
    expect(pairOf(list, 'wellsfargo.com')).toBeUndefined();
    // Until answered, both copies are read.
    expect(await accountNames('ally.com')).toEqual(['Online Savings', 'Savings ••7788']);
    expect(await accountNames('wellsfargo.com')).toEqual(['Mortgage ••2222', 'Mortgage ••3333']);
  });

  it('refuses an answer that is not true or false, and an id that is no match, naming the fix', async () => {
    const open = (await matches()).open[0]?.id ?? '';
    const bad = await call('POST', `/api/finance/account-matches/${open}`, { same: 'yes' });
    expect(bad).toMatchObject({ status: 400, body: { error: `invalid body: 'same' send true ("same account") or false ("keep separate")` } });
    const unknown = await answer('00000000-0000-4000-8000-000000000000', true);
    expect(unknown).toMatchObject({ status: 404, body: { error: expect.stringContaining('GET /api/finance/account-matches') } });
    expect(await call('POST', '/api/finance/account-matches/not-an-id', { same: true })).toMatchObject({
      status: 400,
      body: { error: "invalid params: 'id' expected the id of an account match from GET /api/finance/account-matches" },
    });
  });

  it('answered "same account": one account, and its spending summed once through the query engine', async () => {
    const before = await spending();
    const card = pairOf(await matches(), 'capitalone.com');
    expect(await answer(card?.id ?? '', true)).toMatchObject({ status: 200, body: { state: 'same', automatic: false, answeredAt: expect.any(String) } });
    expect(audited.at(-1)).toMatchObject({ tool: CONSOLE_ACTS.answerAccountMatch, agentId: 'operator', outcome: 'ok', args: { match: card?.id, same: true } });
    expect(await accountNames('capitalone.com')).toEqual(['Venture ••1111']);
    const after = await spending();
    // Each card purchase was counted twice (two connections) before the answer, once after.
    expect(Number(before?.sum_amount) - Number(after?.sum_amount)).toBeCloseTo(-99.99, 2);
    expect(Number(before?.count) - Number(after?.count)).toBe(2);
    // The whole sum: chase once, savings twice (kept separate later, not yet answered), card once, both mortgages.
    expect(after).toMatchObject({ sum_amount: '-2576.94', count: 8 });
  });

  it('answered "keep separate": still separate after three more syncs and a restart of the Console and the sync-worker', async () => {
    const savings = pairOf(await matches(), 'ally.com');
    expect(await answer(savings?.id ?? '', false)).toMatchObject({ status: 200, body: { state: 'separate' } });
    for (let round = 0; round < 3; round += 1) for (const id of connectionIds) await syncNow(id);
    await stop();
    await start();
    for (const id of connectionIds) await syncNow(id);

    const list = await matches();
    expect(list.open).toEqual([]);
    expect(pairOf(list, 'ally.com')).toMatchObject({ id: savings?.id, state: 'separate', answeredAt: expect.any(String) });
    expect(pairOf(list, 'capitalone.com')).toMatchObject({ state: 'same', automatic: false });
    expect(pairOf(list, 'chase.com')).toMatchObject({ state: 'same', automatic: true });
    expect(await accountNames('ally.com')).toEqual(['Online Savings', 'Savings ••7788']);
    expect(await accountNames('capitalone.com')).toEqual(['Venture ••1111']);
    expect(await spending()).toMatchObject({ sum_amount: '-2576.94', count: 8 });
  });

  it('keeps every answer through a lost grant and a sign-in renewed in place', async () => {
    const second = connectionIds[1] ?? '';
    bridges[1]?.revokeAccess();
    await syncNow(second, 'failed');
    expect((await createConnectionQueries(testEnv.db).get(second))?.status).toBe('needs_sign_in');
    // The renewal as a sign-in kind that renews in place does it: new credentials sealed on the same sign-in, its connections active again.
    const claimUrl = Buffer.from(bridges[1]?.issueSetupToken() ?? '', 'base64').toString();
    const accessUrl = (await (await fetch(claimUrl, { method: 'POST' })).text()).trim();
    const signInId = (await createConnectionQueries(testEnv.db).get(second))?.sign_in_id ?? '';
    await testEnv.db.transaction(async (tx) => {
      await createSignInQueries(tx).replaceCredentials(signInId, sealCredentials(key, { accessUrl }, signInId));
      await createConnectionQueries(tx).regranted(signInId, ['finance']);
    });
    await syncNow(second);
    const list = await matches();
    expect(list.open).toEqual([]);
    expect([...list.decided].map((match) => [match.institutionDomain, match.state]).sort()).toEqual([
      ['ally.com', 'separate'],
      ['capitalone.com', 'same'],
      ['chase.com', 'same'],
    ]);
    expect(await spending()).toMatchObject({ sum_amount: '-2576.94', count: 8 });
  });

  it('keeps an answer while the account is gone from its source and applies it when the account comes back', async () => {
    const card = bridges[1]?.accounts.get('B-card');
    bridges[1]?.removeAccount('B-card');
    await syncNow(connectionIds[1] ?? '');
    expect(pairOf(await matches(), 'capitalone.com')).toMatchObject({ state: 'same', second: { accountId: null } });
    if (card) bridges[1]?.addAccount(card);
    await syncNow(connectionIds[1] ?? '');
    // A new gateway row for the returning account; the answer is keyed by connection and source id.
    expect(pairOf(await matches(), 'capitalone.com')).toMatchObject({ state: 'same', second: { accountId: expect.any(String) } });
    expect(await accountNames('capitalone.com')).toEqual(['Venture ••1111']);
  });

  it('reads the later copy again when the earlier connection no longer has the account', async () => {
    bridges[0]?.removeAccount('A-card');
    await syncNow(connectionIds[0] ?? '');
    expect(await accountNames('capitalone.com')).toEqual(['Venture Rewards']);
    const card = await query({ object: 'finance.transaction', where: [{ field: 'amount', op: 'eq', value: '-19.99' }] });
    expect(card.rows.map((row) => row.connection_id)).toEqual([connectionIds[1]]);
  });
});

// Issue 31 item 10: bridge accounts were keyed by their bare id, which is unique only within one bridge
// connection. The migration re-keys the rows cached before, and the operator's answers with them.
describe('finance account matches across the bridge key migration', () => {
  const MIGRATION = path.join(MIGRATIONS_DIR, '1795300020340_simplefin-connection-keys.sql');
  const upSql = () => readFileSync(MIGRATION, 'utf8').split('-- Down Migration')[0] ?? '';
  const second = () => connectionIds[1] ?? '';
  const keysOf = async (table: 'finance_accounts' | 'finance_transactions', id: string) =>
    (await testEnv.db.any(sql.type(z.object({ source_id: z.string() }))`SELECT source_id FROM ${sql.identifier([table])} WHERE connection_id = ${id}::uuid ORDER BY source_id`)).map(
      (row) => row.source_id,
    );
  const gatewayIds = async (id: string) =>
    testEnv.db.any(sql.type(z.object({ id: z.string(), name: z.string().nullable() }))`SELECT id, name FROM finance_accounts WHERE connection_id = ${id}::uuid ORDER BY id`);

  it('keeps an answered account match through the migration and the syncs after it', async () => {
    // The second bridge's rows and the matches naming them as the code before cached them: account `B-card`, transactions `B-card:T0`.
    await testEnv.db.query(sql.unsafe`
      UPDATE finance_transactions SET source_id = split_part(source_id, '/', 2) WHERE connection_id = ${second()}::uuid`);
    await testEnv.db.query(sql.unsafe`
      UPDATE finance_accounts SET source_id = split_part(source_id, '/', 2) WHERE connection_id = ${second()}::uuid`);
    await testEnv.db.query(sql.unsafe`
      UPDATE finance_account_matches SET second_source_id = split_part(second_source_id, '/', 2) WHERE second_connection_id = ${second()}::uuid`);
    expect(await keysOf('finance_accounts', second())).toEqual(['B-card', 'B-chk', 'B-mtg', 'B-sav']);
    const before = await matches();
    const rows = await gatewayIds(second());
    expect(pairOf(before, 'capitalone.com')).toMatchObject({ state: 'same', automatic: false, second: { sourceId: 'B-card' } });

    const client = new pg.Client({ connectionString: testEnv.databaseUrl });
    await client.connect();
    try {
      await client.query(upSql());
      // A second run changes nothing.
      await client.query(upSql());
    } finally {
      await client.end();
    }
    expect(await keysOf('finance_accounts', second())).toEqual(['%/B-card', '%/B-chk', '%/B-mtg', '%/B-sav']);
    expect(await keysOf('finance_transactions', second())).toContain('%/B-card:T0');
    const migrated = await matches();
    expect(pairOf(migrated, 'capitalone.com')).toMatchObject({ id: pairOf(before, 'capitalone.com')?.id, state: 'same', answeredAt: expect.any(String), second: { sourceId: '%/B-card' } });
    expect(pairOf(migrated, 'ally.com')).toMatchObject({ id: pairOf(before, 'ally.com')?.id, state: 'separate' });

    // The bridge now answers each account with its connection: each legacy row goes to the one account with its id, and stays there.
    await syncNow(second());
    await syncNow(second());
    expect(await keysOf('finance_accounts', second())).toEqual(['%/B-card', '%/B-chk', '%/B-mtg', '%/B-sav']);
    expect(await gatewayIds(second())).toEqual(rows);
    const after = await matches();
    expect(after.open).toEqual([]);
    expect([...after.decided].map((match) => [match.id, match.state, match.second.accountId])).toEqual(
      [...before.decided].map((match) => [match.id, match.state, match.second.accountId]),
    );
    // The answer "same account" still merges: the first bridge's card comes back and agents read one card again.
    const card = first.find((account) => account.id === 'A-card');
    if (card) bridges[0]?.addAccount(card);
    await syncNow(connectionIds[0] ?? '');
    expect(await accountNames('capitalone.com')).toEqual(['Venture ••1111']);
    expect(await spending()).toMatchObject({ sum_amount: '-2576.94', count: 8 });
  });
});
