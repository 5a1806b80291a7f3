import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sealCredentials } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { blockingConnection, createLiveRequester, openSyncProducer } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { startHomeAssistantDouble, startSimplefinDouble, type HomeAssistantDouble, type SimplefinDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { startAnsweringServer } from '../../services/sync-worker/test/kit/answering-server.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// Issue 32, outbound policy for source addresses, through the real routes and a real sync: every address
// the sync-worker is given (the hub's, the bank-link bridge's claim and access URLs and where they redirect)
// is refused when it is link-local or a cloud metadata address in any spelling, the unspecified address,
// one of the gateway's own ports on this machine, or not http(s): a 400 at save with nothing saved, and at
// sync a refusal the connection shows at once (not retried, not "could not be reached"). Loopback stays allowed.

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const REST_PORT = await freePort();
const MCP_HTTP_PORT = await freePort();
/** One of this machine's own non-loopback addresses, where the Console's port is its own too. */
const LOCAL_ADDRESS = Object.values(networkInterfaces())
  .flatMap((entries) => entries ?? [])
  .find((entry) => !entry.internal && entry.family === 'IPv4')?.address;

/** Each refused address form the issue names, as an operator would type it (named without the test's free ports), and what the refusal says. */
const REFUSED: Array<[string, string, RegExp]> = [
  ['http://169.254.169.254', 'http://169.254.169.254', /169\.254\.169\.254 is a link-local address/],
  ['http://2852039166:8123', 'http://2852039166:8123', /169\.254\.169\.254 is a link-local address/],
  ['http://0xa9fea9fe:8123', 'http://0xa9fea9fe:8123', /169\.254\.169\.254 is a link-local address/],
  ['http://0251.0376.0251.0376:8123', 'http://0251.0376.0251.0376:8123', /169\.254\.169\.254 is a link-local address/],
  ['http://169.254.43518:8123', 'http://169.254.43518:8123', /169\.254\.169\.254 is a link-local address/],
  ['http://[::ffff:169.254.169.254]:8123', 'http://[::ffff:169.254.169.254]:8123', /169\.254\.169\.254 written as IPv6, a link-local address/],
  ['http://[::ffff:a9fe:a9fe]:8123', 'http://[::ffff:a9fe:a9fe]:8123', /169\.254\.169\.254 written as IPv6, a link-local address/],
  ['http://[fe80::1]:8123', 'http://[fe80::1]:8123', /fe80::1 is a link-local address/],
  ['http://[fd00:ec2::254]', 'http://[fd00:ec2::254]', /fd00:ec2::254 is AWS's metadata service/],
  ['http://[fd20:ce::254]', 'http://[fd20:ce::254]', /fd20:ce::254 is Google Cloud's metadata service/],
  ['http://100.100.100.200', 'http://100.100.100.200', /Alibaba Cloud's metadata service/],
  ['http://metadata.google.internal', 'http://metadata.google.internal', /name of a cloud metadata service/],
  ['http://0.0.0.0:8123', 'http://0.0.0.0:8123', /0\.0\.0\.0 is the unspecified address/],
  ['http://[::]:8123', 'http://[::]:8123', /:: is the unspecified address/],
  ['the Console port on 127.0.0.1', `http://127.0.0.1:${REST_PORT}`, new RegExp(`127\\.0\\.0\\.1:${REST_PORT} is this gateway's own Console port \\(REST_PORT\\)`)],
  ['the agent port on localhost', `http://localhost:${MCP_HTTP_PORT}`, new RegExp(`localhost:${MCP_HTTP_PORT} is this gateway's own agent port \\(MCP_HTTP_PORT\\)`)],
  ['the Console port on [::1]', `http://[::1]:${REST_PORT}`, new RegExp(`::1:${REST_PORT} is this gateway's own Console port`)],
  ...(LOCAL_ADDRESS ? [['the Console port on this machine\'s own network address', `http://${LOCAL_ADDRESS}:${REST_PORT}`, new RegExp(`${LOCAL_ADDRESS.replaceAll('.', '\\.')}:${REST_PORT} is this gateway's own Console port`)] as [string, string, RegExp]] : []),
];
/** At sync the address was given before (saved before the policy, or by a bridge): only what resolves can be dialled. */
const FIX = "give the source's own address instead";

const testEnv = useTestEnvironment();
const key = randomBytes(32);
let hub: HomeAssistantDouble;
let bridge: SimplefinDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let live: Awaited<ReturnType<typeof createLiveRequester>>;
let queue: Queue;
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await fetch(`${consoleService.address}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}
const count = (table: 'connections' | 'sign_ins' | 'setup_token_claims') => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM ${sql.identifier([table])}`);
const connectionRow = (id: string) =>
  testEnv.db.one(sql.type(z.object({ status: z.string(), last_error: z.string().nullable(), last_synced_at: z.string().nullable() }))`
    SELECT status, last_error, last_synced_at::text AS last_synced_at FROM connections WHERE id = ${id}::uuid`);

/** A hub connection whose sealed address is `baseUrl`, as one saved before this policy holds it; not scheduled. */
async function hubConnectionAt(baseUrl: string): Promise<string> {
  const signInId = randomUUID();
  await createSignInQueries(testEnv.db).insert({ id: signInId, provider: 'home-assistant', sealed: sealCredentials(key, { baseUrl, token: hub.token }, signInId), grantedScopes: [], accountId: null });
  const row = await createConnectionQueries(testEnv.db).insert({ id: randomUUID(), provider: 'home-assistant', sector: 'home', displayName: 'Hub', signInId, ingestSecretHash: null, syncIntervalMinutes: 15 });
  return row.id;
}

/** Runs a sync now and waits for its job to end; its state and how many attempts it used. */
async function syncNow(id: string): Promise<{ state: string; attemptsMade: number }> {
  const jobId = await producer.requestSync(id);
  const state = await waitFor(async () => {
    const now = await queue.getJobState(jobId);
    return ['completed', 'failed'].includes(now) ? now : undefined;
  }, 15_000, `sync ${jobId}`);
  return { state, attemptsMade: (await queue.getJob(jobId))?.attemptsMade ?? -1 };
}

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  bridge = await startSimplefinDouble();
  const env = testEnv.env({
    CREDENTIALS_KEY: key.toString('base64'),
    REST_PORT: String(REST_PORT),
    MCP_HTTP_PORT: String(MCP_HTTP_PORT),
    SOURCE_TIMEOUT_MS: '2000',
    SYNC_BACKOFF_MS: '100',
    SIMPLEFIN_ALLOW_LOOPBACK: 'true',
  });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
  live = await createLiveRequester(settings(), createCapturingLogger().log, { timeoutMs: 5_000 });
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'outbound-test'), prefix: bullmqPrefix(settings()) });
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await producer?.close();
  await live?.close();
  await queue?.close();
  await hub?.close();
  await bridge?.close();
});

describe('the outbound policy for source addresses (issue 32)', () => {
  describe('at save: a 400 naming what to fix, nothing saved', () => {
    it.each(REFUSED)('refuses a hub at %s', async (_form, baseUrl, reason) => {
      const before = { connections: await count('connections'), signIns: await count('sign_ins') };
      const answer = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl, token: hub.token } });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatch(/^Home Assistant: 'credentials\.baseUrl' \S+ was refused: /);
      expect(answer.body.error).toMatch(reason);
      expect(answer.body.error).toContain(FIX);
      expect({ connections: await count('connections'), signIns: await count('sign_ins') }).toEqual(before);
    });

    it('refuses a hub address that is not http or https', async () => {
      const answer = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: 'ftp://hub.lan', token: hub.token } });
      expect(answer).toMatchObject({ status: 400, body: { error: expect.stringContaining("'credentials.baseUrl' must be an http:// or https:// address") } });
    });

    it.each(REFUSED.filter(([, address]) => !address.includes('metadata.google')))('refuses a setup token that claims at %s, before and after its host is confirmed, sending nothing', async (_form, address, reason) => {
      const token = Buffer.from(`${address}/simplefin/claim/${randomUUID()}`).toString('base64');
      const claims = await count('setup_token_claims');
      const shown = await call('POST', '/api/connect/simplefin/claim', { setupToken: token });
      expect(shown.status).toBe(400);
      expect(shown.body.error).toMatch(/^this setup token claims at \S+, which was refused: /);
      expect(shown.body.error).toMatch(reason);
      const confirmed = await call('POST', '/api/connect/simplefin/claim', { setupToken: token, confirmHost: new URL(address).host });
      expect(confirmed.status).toBe(400);
      expect(await count('setup_token_claims')).toBe(claims);
    });

    it.each([
      ['https://u:p@169.254.169.254/simplefin', 'https://u:p@169.254.169.254/simplefin', /169\.254\.169\.254 is a link-local address/],
      ['https://u:p@[::ffff:a9fe:a9fe]/simplefin', 'https://u:p@[::ffff:a9fe:a9fe]/simplefin', /written as IPv6, a link-local address/],
      ['http://u:p@127.0.0.1 on the Console port', `http://u:p@127.0.0.1:${REST_PORT}/simplefin`, /is this gateway's own Console port/],
    ])('refuses the access address %s a bridge answers a claim with: 422, nothing saved', async (_form, accessUrl, reason) => {
      const fake = await startAnsweringServer({});
      const path = `/simplefin/claim/${randomUUID()}`;
      fake.answers[path] = { status: 200, body: accessUrl };
      try {
        const before = { connections: await count('connections'), signIns: await count('sign_ins') };
        const answer = await call('POST', '/api/connect/simplefin/claim', { setupToken: Buffer.from(`${fake.base}${path}`).toString('base64'), confirmHost: new URL(fake.base).host });
        expect(answer.status).toBe(422);
        expect(answer.body).toMatchObject({ code: 'address_refused' });
        expect(answer.body.error).toMatch(/^the access address the bridge returned was refused: /);
        expect(answer.body.error).toMatch(reason);
        expect(fake.seen.map((request) => request.path)).toEqual([path]);
        expect({ connections: await count('connections'), signIns: await count('sign_ins') }).toEqual(before);
      } finally {
        await fake.close();
      }
    });

    it('refuses a replaced hub address and keeps the one saved', async () => {
      const created = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: hub.url, token: hub.token } });
      expect(created.status).toBe(201);
      const id = (created.body.connection as { id: string }).id;
      const sealedBefore = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
        SELECT s.credentials FROM sign_ins s JOIN connections c ON c.sign_in_id = s.id WHERE c.id = ${id}::uuid`);
      const replaced = await call('PATCH', `/api/connections/${id}`, { credentials: { baseUrl: 'http://[::ffff:a9fe:a9fe]', token: hub.token } });
      expect(replaced.status).toBe(400);
      expect(replaced.body.error).toMatch(/written as IPv6, a link-local address/);
      const sealedAfter = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
        SELECT s.credentials FROM sign_ins s JOIN connections c ON c.sign_in_id = s.id WHERE c.id = ${id}::uuid`);
      expect(sealedAfter.equals(sealedBefore)).toBe(true);
    });
  });

  describe('at sync: a refusal the connection shows at once, never an outage', () => {
    it.each(REFUSED)('refuses a hub at %s', async (_form, baseUrl, reason) => {
      const id = await hubConnectionAt(baseUrl);
      const job = await syncNow(id);
      // Not retried: one attempt of the five a sync has, as a refusal and not "could not be reached".
      expect(job).toEqual({ state: 'failed', attemptsMade: 1 });
      const row = await connectionRow(id);
      expect(row).toMatchObject({ status: 'error', last_synced_at: null });
      expect(row.last_error).toMatch(/^the hub: the address \S+ was refused: /);
      expect(row.last_error).toMatch(reason);
      expect(row.last_error).toContain("nothing was sent to it; enter the hub's own address in the connection");
      expect(row.last_error).not.toMatch(/could not be reached|retrying/);
    });

    it('refuses a live read of a hub at a metadata address with the refusal, not an outage', async () => {
      const id = await hubConnectionAt('http://0xa9fea9fe:8123');
      const answer = await live.fetchLive({ connectionId: id, object: 'home.entity' }).catch((error: unknown) => error);
      expect(String((answer as Error).message ?? answer)).toMatch(/the hub: the address http:\/\/169\.254\.169\.254:8123 was refused: 169\.254\.169\.254 is a link-local address/);
    });

    it('still syncs a hub on loopback, by address and by the name localhost', async () => {
      for (const baseUrl of [hub.url, hub.url.replace('127.0.0.1', 'localhost')]) {
        const id = await hubConnectionAt(baseUrl);
        expect(await syncNow(id)).toMatchObject({ state: 'completed' });
        expect(await connectionRow(id)).toMatchObject({ status: 'active', last_error: null, last_synced_at: expect.any(String) });
      }
    });
  });

  describe('redirects of the bank-link bridge: each hop is checked', () => {
    let connectionId = '';

    beforeAll(async () => {
      const claimed = await call('POST', '/api/connect/simplefin/claim', { setupToken: bridge.issueSetupToken(), confirmHost: new URL(bridge.url).host });
      expect(claimed.status).toBe(200);
      connectionId = (claimed.body.connections as Array<{ id: string }>)[0]?.id ?? '';
      await waitFor(async () => ((await connectionRow(connectionId)).last_synced_at ? true : undefined), 15_000, 'the first bridge sync');
    });

    it.each([
      ['http://169.254.169.254/simplefin/accounts', 'http://169.254.169.254/simplefin/accounts', /169\.254\.169\.254 is a link-local address/],
      ['http://[::ffff:a9fe:a9fe]/simplefin/accounts', 'http://[::ffff:a9fe:a9fe]/simplefin/accounts', /written as IPv6, a link-local address/],
      ['http://2852039166/simplefin/accounts', 'http://2852039166/simplefin/accounts', /169\.254\.169\.254 is a link-local address/],
      ['the Console port on 127.0.0.1', `http://127.0.0.1:${REST_PORT}/simplefin/accounts`, /is this gateway's own Console port/],
    ])('refuses a redirect to %s without following it', async (_form, location, reason) => {
      bridge.redirectAccounts(location);
      await testEnv.db.query(sql.unsafe`
        UPDATE connections SET sync_cursor = jsonb_build_object('requestedAt', (extract(epoch FROM now()) * 1000)::bigint - 7200000) WHERE id = ${connectionId}::uuid`);
      const job = await syncNow(connectionId);
      expect(job).toEqual({ state: 'failed', attemptsMade: 1 });
      const row = await connectionRow(connectionId);
      expect(row.status).toBe('error');
      expect(row.last_error).toMatch(/^the bridge: the address \S+ was refused: /);
      expect(row.last_error).toMatch(reason);
      expect(row.last_error).toContain('claim a new setup token');
    });

    it('syncs again once the bridge stops redirecting', async () => {
      bridge.redirectAccounts(null);
      await testEnv.db.query(sql.unsafe`
        UPDATE connections SET sync_cursor = jsonb_build_object('requestedAt', (extract(epoch FROM now()) * 1000)::bigint - 7200000) WHERE id = ${connectionId}::uuid`);
      expect(await syncNow(connectionId)).toMatchObject({ state: 'completed' });
      expect(await connectionRow(connectionId)).toMatchObject({ last_error: null });
    });
  });
});
