import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { buildAuditRow } from '../audit/audit-fns.ts';
import { insertAuditRows } from '../audit/audit-queries.ts';
import { sql } from '../db/index.ts';
import { createAddressPolicy, createOutboundFetch } from '../outbound/index.ts';
import { rollUpActivityOnce } from './activity-rollup.ts';
import { createAlertNotifier } from './alert-notifier.ts';
import { createDestinationStore, DestinationRefusedError, parseDestination } from './notify-destination.ts';

const testEnv = useTestEnvironment();
const key = randomBytes(32);

/**
 * A local receiver shaped as ntfy's JSON publishing (POST JSON to the server's root:
 * https://docs.ntfy.sh/publish/#publish-as-json) or the Apprise API's notify (POST /notify/<key> with
 * title, body, type: https://github.com/caronc/apprise-api#persistent-storage-solution). Answers 200, or 503
 * while `failing` is above zero.
 */
type Received = { path: string; body: Record<string, unknown> };
async function receiver(): Promise<{ url: string; received: Received[]; failing: { count: number }; close(): Promise<void> }> {
  const received: Received[] = [];
  const failing = { count: 0 };
  const read = async (request: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
  const server: Server = createServer((request, response) => {
    void read(request).then((text) => {
      if (failing.count > 0) {
        failing.count -= 1;
        response.writeHead(503).end();
        return;
      }
      received.push({ path: request.url ?? '', body: JSON.parse(text) as Record<string, unknown> });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, received, failing, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let ntfy: Awaited<ReturnType<typeof receiver>>;
let apprise: Awaited<ReturnType<typeof receiver>>;
const outbound = createOutboundFetch(createAddressPolicy({ ownPorts: [] }));

beforeAll(async () => {
  ntfy = await receiver();
  apprise = await receiver();
});
afterAll(async () => {
  await ntfy.close();
  await apprise.close();
  await outbound.close?.();
});

const store = () => createDestinationStore(testEnv.db, key);
const notifier = () => createAlertNotifier({ db: testEnv.db, destinations: store(), fetch: outbound.fetch, log: createCapturingLogger().log, backoffBaseMs: 300 });
const call = (agentId: string, sector: string, decision: 'allow' | 'deny' = 'allow') =>
  buildAuditRow({ agentId, tool: 'query', sector, decision, denyReason: decision === 'deny' ? 'sector not granted' : null, outcome: 'ok' }).row;
async function rollUpAll(): Promise<void> {
  while ((await rollUpActivityOnce(testEnv.db)).rows > 0);
}

describe('alert destinations: the kind from the URL (issue 41)', () => {
  it.each([
    ['https://ntfy.example/pcg-alerts', 'ntfy'],
    ['https://apprise.example/notify/abc123', 'apprise'],
    ['https://home.example/apprise/notify/abc123', 'apprise'],
  ])('%s is %s', (url, kind) => {
    expect(parseDestination(url).kind).toBe(kind);
  });
  it.each(['ftp://ntfy.example/topic', 'https://ntfy.example/', 'https://ntfy.example/a/b', 'https://user:pw@ntfy.example/topic', 'not a url'])('refuses %s', (url) => {
    expect(() => parseDestination(url)).toThrow(DestinationRefusedError);
  });
});

// In order on one database: the record before the first start, then new activity after it.
describe('notifications sent by the sync-worker through the outbound policy (issue 41)', () => {
  it('sends nothing while no destination is saved, and no alert raised before it was saved', async () => {
    await rollUpAll();
    await insertAuditRows(testEnv.db, [call('early', 'home')]);
    await rollUpAll();
    await notifier().runOnce();
    expect(ntfy.received).toEqual([]);
    await store().save(parseDestination(`${ntfy.url}/pcg-alerts`));
    await notifier().runOnce();
    expect(ntfy.received).toEqual([]);
  });

  it('an agent reading a new sector, tripping a refusal burst and exceeding its usual volume reaches a local ntfy receiver as ntfy JSON, each alert once', async () => {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO activity_daily (user_id, day, agent_id, sector, tool, decision, calls) VALUES
        (1, (now() AT TIME ZONE 'UTC')::date - 2, 'claude', 'finance', 'query', 'allow', 5), (1, (now() AT TIME ZONE 'UTC')::date - 1, 'claude', 'finance', 'query', 'allow', 7)`);
    await insertAuditRows(testEnv.db, [...Array.from({ length: 100 }, () => call('claude', 'mail')), ...Array.from({ length: 10 }, () => call('claude', 'health', 'deny'))]);
    await rollUpAll();
    await notifier().runOnce();
    await notifier().runOnce();
    expect(ntfy.received.map((message) => message.path)).toEqual(['/', '/', '/']);
    for (const message of ntfy.received) {
      expect(Object.keys(message.body).sort()).toEqual(['message', 'priority', 'tags', 'title', 'topic']);
      expect(message.body.topic).toBe('pcg-alerts');
    }
    expect(ntfy.received.map((message) => message.body.message).sort()).toEqual([
      'claude made 110 calls on ' + new Date().toISOString().slice(0, 10) + ', against a usual 6 a day',
      'claude used mail for the first time',
      'claude was refused 10 times within 5 minutes',
    ]);
  });

  it('retries a destination that fails, waiting longer after each failure, until it is sent; the Apprise API gets {title, body, type} at /notify/<key>', async () => {
    await store().save(parseDestination(`${apprise.url}/notify/pcg`));
    apprise.failing.count = 2;
    await insertAuditRows(testEnv.db, [call('cursor', 'calendar')]);
    await rollUpAll();
    const attempts = () => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT notify_attempts AS n FROM activity_alerts WHERE agent_id = 'cursor'`);
    await notifier().runOnce();
    expect(await attempts()).toBe(1);
    // The next try waits: a pass at once sends nothing.
    await notifier().runOnce();
    expect(await attempts()).toBe(1);
    const waited = await testEnv.db.oneFirst(sql.type(z.object({ ms: z.number() }))`
      SELECT (extract(epoch FROM notify_next_at - now()) * 1000)::int AS ms FROM activity_alerts WHERE agent_id = 'cursor'`);
    expect(waited).toBeGreaterThan(0);
    await testEnv.db.query(sql.unsafe`UPDATE activity_alerts SET notify_next_at = now() WHERE agent_id = 'cursor'`);
    await notifier().runOnce();
    expect(await attempts()).toBe(2);
    const second = await testEnv.db.oneFirst(sql.type(z.object({ ms: z.number() }))`
      SELECT (extract(epoch FROM notify_next_at - now()) * 1000)::int AS ms FROM activity_alerts WHERE agent_id = 'cursor'`);
    expect(second).toBeGreaterThan(waited);
    await testEnv.db.query(sql.unsafe`UPDATE activity_alerts SET notify_next_at = now() WHERE agent_id = 'cursor'`);
    await notifier().runOnce();
    expect(await attempts()).toBe(3);
    expect(apprise.received).toEqual([{ path: '/notify/pcg', body: { title: 'Personal Context Gateway alert', body: 'cursor used calendar for the first time', type: 'info' } }]);
  });

  it('sends the digest of the previous UTC day once', async () => {
    // A destination saved before yesterday ended, and yesterday's activity in the rollup.
    await testEnv.db.query(sql.unsafe`UPDATE alert_destination SET saved_at = now() - interval '3 days'`);
    await notifier().runOnce();
    await notifier().runOnce();
    const digests = apprise.received.filter((message) => String(message.body.title).startsWith('Personal Context Gateway: '));
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    expect(digests).toEqual([
      { path: '/notify/pcg', body: { title: `Personal Context Gateway: ${yesterday}`, body: `${yesterday} (UTC): 7 agent calls by 1 agents, 0 refused; 0 alerts.`, type: 'info' } },
    ]);
  });

  it('keeps the destination write-only: sealed in the database, described without its URL', async () => {
    expect(await store().describe()).toMatchObject({ set: true, kind: 'apprise' });
    expect(JSON.stringify(await store().describe())).not.toContain('127.0.0.1');
    const stored = await testEnv.db.oneFirst(sql.type(z.object({ sealed: z.string() }))`SELECT encode(url_sealed, 'escape') AS sealed FROM alert_destination`);
    expect(stored).not.toContain('notify/pcg');
  });
});
