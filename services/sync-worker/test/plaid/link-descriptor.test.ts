import { randomBytes } from 'node:crypto';
import { Job, Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { createOriginRebaser, PLAID, registerExtraProvider } from '@pcg/shared/providers';
import { blockingConnection } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { startPlaidDouble, type PlaidDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { createItemRemoveRunner } from '../../src/sign-ins/item-remove.ts';
import type { LinkApp } from '../../src/sign-ins/link-aggregators.ts';
import { createLinkRunners } from '../../src/sign-ins/link-flow.ts';

// The `link` sign-in is driven by the provider's descriptor (issue 43): any kind whose descriptor declares
// a link signs in through the aggregator that link names, with the application saved for that kind; a
// kind that declares none is refused, whatever its name.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const OTHER_AGGREGATOR_KIND = 'test-bank-link';
const NO_SPEC_KIND = 'test-link-without-spec';
registerExtraProvider({ ...PLAID, kind: OTHER_AGGREGATOR_KIND, displayName: 'Second bank link' });
registerExtraProvider({ ...PLAID, kind: NO_SPEC_KIND, displayName: 'Link without a spec', link: undefined });

let aggregator: PlaidDouble;
let queue: Queue;
const apps = new Map<string, LinkApp>();
const asked: string[] = [];
const scheduled: string[] = [];
let runners: ReturnType<typeof createLinkRunners>;
let itemRemove: ReturnType<typeof createItemRemoveRunner>;
const job = <T extends object>(name: string, data: T) => new Job(queue, name, data, {}, `${name}-${randomBytes(4).toString('hex')}`);
const deadline = () => Date.now() + 60_000;

beforeAll(async () => {
  aggregator = await startPlaidDouble();
  const settings = { REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix };
  queue = new Queue('signin', { connection: blockingConnection(settings, 'link-descriptor'), prefix: bullmqPrefix(settings) });
  const loadApp = async (kind: string) => {
    asked.push(kind);
    return apps.get(kind) ?? null;
  };
  const common = { credentialsKey: key, log: createCapturingLogger('sync-worker').log, requestTimeoutMs: 2_000, rebaseUrl: createOriginRebaser({ PLAID_BASE_URL: aggregator.url }), loadApp };
  runners = createLinkRunners({ ...common, db: testEnv.db, sync: { schedule: async (connectionId) => void scheduled.push(connectionId) } });
  itemRemove = createItemRemoveRunner(common);
});
afterAll(async () => {
  await queue?.close();
  await aggregator?.close();
});

describe('a link sign-in driven by its descriptor', () => {
  it("links a bank for a kind other than the aggregator's own, with that kind's application, and removes its item", async () => {
    apps.set(OTHER_AGGREGATOR_KIND, { clientId: aggregator.app.clientId, clientSecret: aggregator.app.secret, environment: 'sandbox' });
    const start = { provider: OTHER_AGGREGATOR_KIND, completionRedirect: 'http://127.0.0.1:8081/api/connect/test-bank-link/callback', deadline: deadline() };
    const started = await runners.link_start(job('link_start', start), start);
    expect(started).toMatchObject({ status: 'started' });
    expect(asked).toEqual([OTHER_AGGREGATOR_KIND]);
    const { linkToken } = started as { linkToken: string };
    await fetch(`${aggregator.url}/test/link/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link_token: linkToken }) });

    const exchange = { provider: OTHER_AGGREGATOR_KIND, linkToken, deadline: deadline() };
    const signedIn = await runners.link_exchange(job('link_exchange', exchange), exchange);
    expect(signedIn).toMatchObject({ status: 'signed_in', renewed: false, grantedSectors: ['finance'] });
    const { signInId, connectionIds } = signedIn as { signInId: string; connectionIds: string[] };
    const providers = await testEnv.db.anyFirst(sql.type(z.object({ provider: z.string() }))`SELECT provider FROM connections WHERE id = ANY(${sql.array(connectionIds, 'uuid')})`);
    expect(providers).toEqual([OTHER_AGGREGATOR_KIND]);
    expect(scheduled).toEqual(connectionIds);
    expect(aggregator.items()).toHaveLength(1);

    const sealed = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`SELECT credentials FROM sign_ins WHERE id = ${signInId}::uuid`);
    const removal = { provider: OTHER_AGGREGATOR_KIND, signInId, sealedCredentials: sealed.toString('base64') };
    expect(await itemRemove(job('item_remove', removal), removal)).toEqual({ outcome: 'removed' });
    expect(aggregator.items()).toEqual([]);
  });

  it("asks for the application saved for the provider's own kind, not another link provider's", async () => {
    asked.length = 0;
    const start = { provider: PLAID.kind, completionRedirect: 'http://127.0.0.1:8081/api/connect/plaid/callback', deadline: deadline() };
    expect(await runners.link_start(job('link_start', start), start)).toMatchObject({ status: 'refused', reason: 'not_configured', message: expect.stringContaining("save Bank aggregator (Plaid)'s application credentials") });
    expect(asked).toEqual([PLAID.kind]);
  });

  it.each([
    ['an OAuth provider', 'google'],
    ['a provider that says link but declares no link', NO_SPEC_KIND],
    ['an unknown kind', 'no-such-provider'],
  ])('refuses a link for %s, and removes no item for it', async (_what, provider) => {
    asked.length = 0;
    const start = { provider, completionRedirect: 'http://127.0.0.1:8081/api/connect/x/callback', deadline: deadline() };
    expect(await runners.link_start(job('link_start', start), start)).toEqual({ status: 'refused', reason: 'not_configured', message: `'${provider}' does not sign in with a hosted link` });
    const removal = { provider, signInId: '00000000-0000-4000-8000-000000000001', sealedCredentials: Buffer.from('sealed').toString('base64') };
    expect(await itemRemove(job('item_remove', removal), removal)).toEqual({ outcome: 'skipped', detail: `'${provider}' holds no item at an aggregator` });
    expect(asked).toEqual([]);
  });
});
