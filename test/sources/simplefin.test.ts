import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { blockingConnection, openSyncProducer } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { startSimplefinDouble, type SimplefinDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { SETUP_TOKEN_REFUSED, SETUP_TOKEN_USED } from '../../services/sync-worker/src/sign-ins/token-claim.ts';
import { BRIDGE_PAYMENT_REQUIRED } from '../../services/sync-worker/src/connectors/simplefin/simplefin-classifier.ts';

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
    const [asked] = bridge.accountRequests();
    expect(asked?.basicUser).toMatch(/^user/);
    expect(asked?.query.get('pending')).toBe('1');
    const accounts = await rowsOf('finance.account');
    expect(accounts.map((row) => row.institution_domain).sort()).toEqual(['ally.com', 'chase.com']);
    const checking = accounts.find((row) => row.institution_domain === 'chase.com');
    expect(checking).toMatchObject({ mask: '4821', balance_current: '4812.33', balance_available: '4712.33', currency: 'USD' });
    const transactions = await rowsOf('finance.transaction');
    const groceries = transactions.find((row) => row.source_id === 'ACT-chase-chk:TRN-1');
    const chase = bridge.accounts.get('ACT-chase-chk');
    const posted = chase?.transactions.find((tx) => tx.id === 'TRN-1')?.posted ?? 0;
    expect(groceries).toMatchObject({ amount: '-54.20', account_id: checking?.id, posted_on: new Date(posted * 1000).toISOString().slice(0, 10), pending: false });
    expect(transactions.find((row) => row.source_id === 'ACT-chase-chk:TRN-2')?.amount).toBe('3850.00');
    expect(transactions.find((row) => row.source_id === 'ACT-chase-chk:TRN-3')).toMatchObject({ pending: true, posted_on: null });
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
    expect((await rowsOf('finance.transaction')).map((row) => row.source_id)).not.toContain('ACT-ally-sav:TRN-9');
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
