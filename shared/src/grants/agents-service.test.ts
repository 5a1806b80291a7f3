import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '../db/index.ts';
import { createRedis, type Redis } from '../redis/index.ts';
import { SECTORS } from '../sectors/index.ts';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { createAgentEventPublisher, parseAgentEvent, type AgentEventPublisher } from './agent-events.ts';
import { generateAgentKey } from './agent-key-fns.ts';
import { AgentNotFoundError, AgentRevokedError } from './agents-errors.ts';
import { createAgentService, type AgentService } from './agents-service.ts';
import type { AgentEvent } from './grants-types.ts';
import { createKeyResolver, type KeyResolver } from './key-resolver.ts';

const testEnv = useTestEnvironment();
const DAY_MS = 86_400_000;

/** The clock the service and resolver read; tests move it instead of sleeping. */
let clock = new Date('2026-03-01T10:00:00.000Z');
let service: AgentService;
let resolver: KeyResolver;
let subscriber: Redis;
/** Each event as the subscriber received it. */
const received: { event: AgentEvent }[] = [];
/** The agent's generation as another connection saw it at the moment each event was handed to Redis. */
const atPublish: { event: AgentEvent; generation: number | null }[] = [];

const generationOf = async (name: string) =>
  testEnv.db.maybeOneFirst(sql.type(z.object({ generation: z.number() }))`SELECT generation FROM agents WHERE name = ${name}`);

beforeAll(async () => {
  const settings = { REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix };
  const realPublisher = createAgentEventPublisher(testEnv.redis, settings);
  service = createAgentService({
    db: testEnv.db,
    events: {
      async publish(event) {
        atPublish.push({ event, generation: await generationOf(event.agent) });
        await realPublisher.publish(event);
      },
    } satisfies AgentEventPublisher,
    log: createCapturingLogger().log,
    now: () => clock,
  });
  resolver = createKeyResolver({ db: testEnv.db, direct: testEnv.direct });
  subscriber = createRedis(settings, 'subscriber', 'test-subscriber');
  subscriber.on('message', (_channel: string, message: string) => {
    const event = parseAgentEvent(message);
    if (!event) throw new Error(`not an agent event: ${message}`);
    received.push({ event });
  });
  // The literal channel name: ioredis does not prefix channels, so the publisher must.
  await subscriber.subscribe(`${testEnv.redisPrefix}agent-events`);
});
afterAll(async () => subscriber.quit());

/**
 * Runs a change and waits (with a deadline) for the events it should publish. Only events about the
 * agents named in `expected` count, so a late event of an earlier test cannot be mistaken for one.
 */
async function expectEvents<T>(change: () => Promise<T>, expected: AgentEvent[]): Promise<T> {
  const agents = new Set(expected.map((event) => event.agent));
  const before = received.length;
  const result = await change();
  const mine = () => received.slice(before).filter((entry) => agents.has(entry.event.agent));
  await waitFor(() => (mine().length >= expected.length ? true : undefined), 5_000, 'agent events');
  await noEventsAfter(before, () => Promise.resolve(), agents, expected.length);
  expect(mine().map((entry) => entry.event)).toEqual(expected);
  return result;
}

/**
 * Runs a change, then publishes a marker: events arrive in publish order, so once the marker is in,
 * anything the change published is in too. Fails when more than `allowed` events named `agents`.
 */
async function noEventsAfter(before: number, change: () => Promise<unknown>, agents: Set<string>, allowed = 0): Promise<void> {
  await change();
  const marker = `marker-${received.length}-${Math.random()}`;
  await createAgentEventPublisher(testEnv.redis, { REDIS_PREFIX: testEnv.redisPrefix }).publish({ agent: marker, kind: 'created' });
  await waitFor(() => (received.some((entry) => entry.event.agent === marker) ? true : undefined), 5_000, 'marker');
  expect(received.slice(before).filter((entry) => agents.has(entry.event.agent))).toHaveLength(allowed);
}

const noEventsFrom = (agent: string, change: () => Promise<unknown>) => noEventsAfter(received.length, change, new Set([agent]));

/** Creates a grant and waits for its `created` event, so that later tests see only their own events. */
const keyOf = async (name: string, sectors: string[] = ['finance'], expiresInDays?: number) =>
  (await expectEvents(() => service.createOrRotate({ name, sectors, expiresInDays }), [{ agent: name, kind: 'created' }])).issued.key;

describe('spec 3.1: the agent key lifecycle', () => {
  it('creates an active grant that resolves, announces it, and starts at generation 0', async () => {
    const { created, issued } = await expectEvents(() => service.createOrRotate({ name: 'alpha', sectors: ['finance', 'mail'] }), [
      { agent: 'alpha', kind: 'created' },
    ]);
    expect(created).toBe(true);
    expect(issued).toMatchObject({ name: 'alpha', sectors: ['finance', 'mail'], expiresAt: null });
    const resolved = await resolver.resolveKey(issued.key, clock);
    expect(resolved).toEqual({
      ok: true,
      grant: { agentId: expect.any(Number), agentName: 'alpha', sectors: ['finance', 'mail'], expiresAt: null, generation: 0 },
    });
  });

  it('refuses a key that matches no grant with unknown agent', async () => {
    expect(await resolver.resolveKey(generateAgentKey(), clock)).toEqual({ ok: false, reason: 'unknown agent' });
  });

  it('rotate: the old key is refused, the new one works, the generation is bumped and announced', async () => {
    const oldKey = await keyOf('bravo');
    const issued = await expectEvents(() => service.rotate('bravo'), [{ agent: 'bravo', kind: 'rotated' }]);
    expect(issued.key).not.toBe(oldKey);
    expect(await resolver.resolveKey(oldKey, clock)).toEqual({ ok: false, reason: 'unknown agent' });
    expect(await resolver.resolveKey(issued.key, clock)).toMatchObject({ ok: true, grant: { agentName: 'bravo', generation: 1 } });
  });

  it('creating a key under an existing name is a rotation (spec 5 rule 7) that replaces the grant', async () => {
    const oldKey = await keyOf('charlie', ['mail'], 30);
    const { created, issued } = await expectEvents(() => service.createOrRotate({ name: 'charlie', sectors: ['home'] }), [
      { agent: 'charlie', kind: 'rotated' },
    ]);
    expect(created).toBe(false);
    expect(await resolver.resolveKey(oldKey, clock)).toEqual({ ok: false, reason: 'unknown agent' });
    expect(await resolver.resolveKey(issued.key, clock)).toMatchObject({
      ok: true,
      grant: { agentName: 'charlie', sectors: ['home'], expiresAt: null, generation: 1 },
    });
  });

  it('revoke: the key is refused with revoked, announced once; a second revoke changes nothing', async () => {
    const key = await keyOf('delta');
    const revoked = await expectEvents(() => service.revoke('delta'), [{ agent: 'delta', kind: 'revoked' }]);
    expect(revoked).toMatchObject({ name: 'delta', status: 'revoked', revokedAt: expect.any(String) });
    expect(await resolver.resolveKey(key, clock)).toEqual({ ok: false, reason: 'revoked' });
    expect(await generationOf('delta')).toBe(1);
    await noEventsFrom('delta', () => service.revoke('delta'));
    expect(await generationOf('delta')).toBe(1);
  });

  it('a revoked grant cannot be rotated back to life, but creating it again issues a working key', async () => {
    await keyOf('echo');
    await service.revoke('echo');
    await expect(service.rotate('echo')).rejects.toBeInstanceOf(AgentRevokedError);
    const { created, issued } = await service.createOrRotate({ name: 'echo', sectors: [] });
    expect(created).toBe(false);
    expect(await resolver.resolveKey(issued.key, clock)).toMatchObject({ ok: true, grant: { agentName: 'echo' } });
  });

  it('expiry: the key works until its expiry instant and is refused with expired from then on', async () => {
    const key = await keyOf('foxtrot', ['health'], 1);
    const deadline = new Date(clock.getTime() + DAY_MS);
    expect(await resolver.resolveKey(key, new Date(deadline.getTime() - 1))).toMatchObject({
      ok: true,
      grant: { expiresAt: deadline.toISOString() },
    });
    expect(await resolver.resolveKey(key, deadline)).toEqual({ ok: false, reason: 'expired' });
    expect(await resolver.resolveKey(key, new Date(deadline.getTime() + DAY_MS))).toEqual({ ok: false, reason: 'expired' });
  });

  it('edit sectors: the new sectors resolve, the generation is bumped and announced', async () => {
    const key = await keyOf('golf', ['finance']);
    const updated = await expectEvents(() => service.update('golf', { sectors: ['calendar', 'contacts'] }), [
      { agent: 'golf', kind: 'sectors_changed' },
    ]);
    expect(updated).toMatchObject({ sectors: ['calendar', 'contacts'], status: 'active' });
    expect(await resolver.resolveKey(key, clock)).toMatchObject({
      ok: true,
      grant: { sectors: ['contacts', 'calendar'], generation: 1 },
    });
  });

  it('edit deadline: a deadline is set, moved and removed, each change bumped and announced', async () => {
    const key = await keyOf('hotel');
    const inTenDays = new Date(clock.getTime() + 10 * DAY_MS);
    await expectEvents(() => service.update('hotel', { expiresInDays: 10 }), [{ agent: 'hotel', kind: 'deadline_changed' }]);
    expect(await resolver.resolveKey(key, inTenDays)).toEqual({ ok: false, reason: 'expired' });

    await expectEvents(() => service.update('hotel', { expiresInDays: null }), [{ agent: 'hotel', kind: 'deadline_changed' }]);
    expect(await resolver.resolveKey(key, inTenDays)).toMatchObject({ ok: true, grant: { expiresAt: null, generation: 2 } });
  });

  it('edit deadline revives an expired key when the new deadline lies ahead', async () => {
    const key = await keyOf('india', ['home'], 1);
    clock = new Date(clock.getTime() + 2 * DAY_MS);
    expect(await resolver.resolveKey(key, clock)).toEqual({ ok: false, reason: 'expired' });
    await service.update('india', { expiresInDays: 30 });
    expect(await resolver.resolveKey(key, clock)).toMatchObject({ ok: true });
  });

  it('an edit of both fields bumps once and announces both changes', async () => {
    await keyOf('juliet');
    await expectEvents(() => service.update('juliet', { sectors: ['mail'], expiresInDays: 90 }), [
      { agent: 'juliet', kind: 'sectors_changed' },
      { agent: 'juliet', kind: 'deadline_changed' },
    ]);
    expect(await generationOf('juliet')).toBe(1);
  });

  it('delete: the key is refused with unknown agent and the deletion is announced', async () => {
    const key = await keyOf('kilo');
    await expectEvents(() => service.remove('kilo'), [{ agent: 'kilo', kind: 'deleted' }]);
    expect(await resolver.resolveKey(key, clock)).toEqual({ ok: false, reason: 'unknown agent' });
    expect(await generationOf('kilo')).toBeNull();
  });

  it('publishes each event only after its change committed', async () => {
    await keyOf('lima');
    const before = atPublish.length;
    await service.rotate('lima');
    await service.update('lima', { sectors: [] });
    await service.revoke('lima');
    await service.remove('lima');
    expect(atPublish.slice(before).map((entry) => [entry.event.kind, entry.generation])).toEqual([
      ['rotated', 1],
      ['sectors_changed', 2],
      ['revoked', 3],
      ['deleted', null],
    ]);
  });

  it.each([
    ['rotate', () => service.rotate('nobody')],
    ['revoke', () => service.revoke('nobody')],
    ['delete', () => service.remove('nobody')],
    ['edit', () => service.update('nobody', { sectors: ['mail'] })],
  ])('%s of an unknown name fails with not found and announces nothing', async (_label, act) => {
    await noEventsFrom('nobody', () => expect(act()).rejects.toBeInstanceOf(AgentNotFoundError));
  });

  it('keeps a committed change when the event cannot be published, and says so in the log', async () => {
    const away = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    away.on('error', () => {});
    const { log, lines } = createCapturingLogger();
    try {
      const offline = createAgentService({ db: testEnv.db, events: createAgentEventPublisher(away, { REDIS_PREFIX: testEnv.redisPrefix }), log });
      const { issued } = await offline.createOrRotate({ name: 'mike', sectors: ['mail'] });
      expect(await resolver.resolveKey(issued.key)).toMatchObject({ ok: true, grant: { agentName: 'mike' } });
      await waitFor(() => (lines().some((line) => line.includes('agent event not published') && line.includes('"agent":"mike"')) ? true : undefined), 5_000, 'the log line');
    } finally {
      away.disconnect();
    }
  });

  it('answers without waiting for a Redis that does not answer: the revoke stands, the event goes out late or is logged', async () => {
    // A peer that accepts the connection and never answers, as a Redis that hangs does.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const hung = createRedis({ REDIS_URL: `redis://127.0.0.1:${(silent.address() as AddressInfo).port}`, REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    hung.on('error', () => {});
    const publisher = createAgentEventPublisher(hung, { REDIS_PREFIX: testEnv.redisPrefix });
    let settled = false;
    const watched = {
      publish: (event: AgentEvent) => publisher.publish(event).finally(() => void (settled = true)),
    } satisfies AgentEventPublisher;
    const { log, lines } = createCapturingLogger();
    try {
      const key = await keyOf('hung-redis');
      const offline = createAgentService({ db: testEnv.db, events: watched, log });
      expect(await offline.revoke('hung-redis')).toMatchObject({ name: 'hung-redis', status: 'revoked' });
      expect(settled).toBe(false);
      expect(await resolver.resolveKey(key)).toEqual({ ok: false, reason: 'revoked' });
      expect(lines().some((line) => line.includes('agent event publish still pending') && line.includes('hung-redis'))).toBe(true);
    } finally {
      hung.disconnect();
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe('the resolver', () => {
  it.each([
    ['a wildcard', ['*'], [...SECTORS]],
    ['unknown names', ['finance', 'banking', 'FINANCE'], ['finance']],
    ['an empty list (default-deny, spec 5 rule 2)', [], []],
  ])('resolves %s', async (label, stored, sectors) => {
    const key = await keyOf(`sectors-${label.replaceAll(/[^a-z]/g, '')}`, stored);
    expect(await resolver.resolveKey(key, clock)).toMatchObject({ ok: true, grant: { sectors } });
  });

  it('reads the Authorization header: any case of Bearer, surrounding spaces, no key as missing', async () => {
    const key = await keyOf('november', ['mail']);
    for (const header of [`Bearer ${key}`, `bearer ${key}`, `BEARER   ${key}  `]) {
      expect(await resolver.resolveAuthorization(header, clock)).toMatchObject({ ok: true, grant: { agentName: 'november' } });
    }
    for (const header of [undefined, '', 'Bearer', 'Bearer   ', `Basic ${key}`, key]) {
      expect(await resolver.resolveAuthorization(header, clock)).toEqual({ ok: false, reason: 'missing' });
    }
  });

  it('logs each refusal at debug level with its reason and the agent name when there is one, never the key', async () => {
    const { log, lines } = createCapturingLogger('grants');
    const logging = createKeyResolver({ db: testEnv.db, direct: testEnv.direct, log });
    const live = await keyOf('papa');
    const revoked = await keyOf('quebec');
    await service.revoke('quebec');
    const expiring = await keyOf('romeo', ['home'], 1);
    const unknown = generateAgentKey();
    expect(await logging.resolveKey(live, clock)).toMatchObject({ ok: true });
    await logging.resolveKey(unknown, clock);
    await logging.resolveKey('pcg_short', clock);
    await logging.resolveKey(revoked, clock);
    await logging.resolveKey(expiring, new Date(clock.getTime() + 2 * DAY_MS));
    await logging.resolveAuthorization(undefined, clock);
    const logged = lines().map((line) => JSON.parse(line) as Record<string, unknown>);
    const DEBUG = 20;
    expect(logged.map(({ level, msg, reason, agent, malformed }) => ({ level, msg, reason, agent, malformed }))).toEqual([
      { level: DEBUG, msg: 'agent key refused', reason: 'unknown agent', agent: undefined, malformed: undefined },
      { level: DEBUG, msg: 'agent key refused', reason: 'unknown agent', agent: undefined, malformed: true },
      { level: DEBUG, msg: 'agent key refused', reason: 'revoked', agent: 'quebec', malformed: undefined },
      { level: DEBUG, msg: 'agent key refused', reason: 'expired', agent: 'romeo', malformed: undefined },
    ]);
    for (const key of [live, revoked, expiring, unknown, 'pcg_short']) expect(lines().join('\n')).not.toContain(key);
  });

  it('refuses a token that is not shaped like an agent key as unknown agent, marked malformed', async () => {
    const key = await keyOf('oscar');
    for (const token of ['nonsense', key.slice(0, -1), `pcgat_${key.slice(4)}`, `${key} extra`]) {
      expect(await resolver.resolveAuthorization(`Bearer ${token}`, clock)).toEqual({ ok: false, reason: 'unknown agent', malformed: true });
    }
  });
});
