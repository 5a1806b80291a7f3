import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { AGENT_RULES, AGENT_KEY_PREFIX, AgentViewSchema, createKeyResolver, hashAgentKey, isWellFormedAgentKey, type KeyResolver } from '@pcg/shared/grants';
import { SECTORS } from '@pcg/shared/sectors';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';

const testEnv = useTestEnvironment();
const DAY_MS = 86_400_000;
let clock = new Date('2026-03-01T10:00:00.000Z');
let app: FastifyInstance;
let resolver: KeyResolver;
let subscriber: Redis;
const published: string[] = [];

beforeAll(async () => {
  const config = loadConfig(consoleConfigSchema, testEnv.env());
  app = buildApp({ config, log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, now: () => clock });
  await app.ready();
  resolver = createKeyResolver({ db: testEnv.db, direct: testEnv.direct });
  subscriber = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'subscriber');
  subscriber.on('message', (_channel: string, message: string) => published.push(message));
  await subscriber.subscribe(`${testEnv.redisPrefix}agent-events`);
});
afterAll(async () => {
  await subscriber.quit();
  await app.close();
});

type Json = Record<string, unknown>;
const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
  app.inject({ method, url, ...(body === undefined ? {} : { payload: body as Json }) });
const create = async (body: Json) => {
  const response = await send('POST', '/api/agents', body);
  expect(response.statusCode).toBe(201);
  return response.json<{ name: string; key: string; sectors: string[]; createdAt: string; expiresAt: string | null }>();
};
const listed = async (name: string) => {
  const response = await send('GET', '/api/agents');
  expect(response.statusCode).toBe(200);
  return response.json<Json[]>().find((agent) => agent.name === name);
};
const expectInvalid = async (response: Awaited<ReturnType<typeof send>>, field: string, rule: string) => {
  expect(response.statusCode).toBe(400);
  expect(response.json()).toEqual({ error: `invalid body: '${field}' ${rule}`, code: 'validation_failed' });
};

describe('POST /api/agents', () => {
  it('creates a grant: 201 with name, key, sectors, createdAt and expiresAt, uncacheable', async () => {
    const response = await send('POST', '/api/agents', { name: 'claude-desktop', sectors: ['finance', 'mail'], expiresInDays: 30 });
    expect(response.statusCode).toBe(201);
    expect(response.headers['cache-control']).toBe('no-store');
    const body = response.json<Json>();
    expect(Object.keys(body).sort()).toEqual(['createdAt', 'expiresAt', 'key', 'name', 'sectors']);
    expect(body).toMatchObject({
      name: 'claude-desktop',
      sectors: ['finance', 'mail'],
      expiresAt: new Date(clock.getTime() + 30 * DAY_MS).toISOString(),
    });
    expect(isWellFormedAgentKey(String(body.key))).toBe(true);
    expect(String(body.key).startsWith(AGENT_KEY_PREFIX)).toBe(true);
    expect(await resolver.resolveAuthorization(`Bearer ${String(body.key)}`, clock)).toMatchObject({
      ok: true,
      grant: { agentName: 'claude-desktop', sectors: ['finance', 'mail'] },
    });
  });

  it('stores only the SHA-256 of the key', async () => {
    const { key } = await create({ name: 'hash-only', sectors: [] });
    const stored = await testEnv.db.oneFirst(sql.type(z.object({ key_hash: z.instanceof(Buffer) }))`
      SELECT key_hash FROM agents WHERE name = 'hash-only'`);
    expect(stored.equals(hashAgentKey(key))).toBe(true);
  });

  it('rotates under an existing name: 200, a new key, the old key refused (spec 5 rule 7)', async () => {
    const first = await create({ name: 'rotated-by-post', sectors: ['home'] });
    const response = await send('POST', '/api/agents', { name: 'rotated-by-post', sectors: ['health'] });
    expect(response.statusCode).toBe(200);
    const second = response.json<{ key: string; sectors: string[] }>();
    expect(second.key).not.toBe(first.key);
    expect(second.sectors).toEqual(['health']);
    expect(await resolver.resolveKey(first.key, clock)).toEqual({ ok: false, reason: 'unknown agent' });
    expect(await resolver.resolveKey(second.key, clock)).toMatchObject({ ok: true, grant: { sectors: ['health'] } });
  });

  it('stores "*" and unknown sector names as given; they resolve to all six and are dropped (spec 2.2)', async () => {
    const wildcard = await create({ name: 'everything', sectors: ['*'] });
    const unknown = await create({ name: 'odd-names', sectors: ['finance', 'banking'] });
    expect((await listed('everything'))?.sectors).toEqual(['*']);
    expect((await listed('odd-names'))?.sectors).toEqual(['finance', 'banking']);
    expect(await resolver.resolveKey(wildcard.key, clock)).toMatchObject({ ok: true, grant: { sectors: [...SECTORS] } });
    expect(await resolver.resolveKey(unknown.key, clock)).toMatchObject({ ok: true, grant: { sectors: ['finance'] } });
  });

  it('accepts the boundaries of expiresInDays, and null or absent as no expiry', async () => {
    expect((await create({ name: 'one-day', sectors: [], expiresInDays: 1 })).expiresAt).toBe(new Date(clock.getTime() + DAY_MS).toISOString());
    expect((await create({ name: 'ten-years', sectors: [], expiresInDays: 3650 })).expiresAt).toBe(
      new Date(clock.getTime() + 3650 * DAY_MS).toISOString(),
    );
    expect((await create({ name: 'no-deadline', sectors: [], expiresInDays: null })).expiresAt).toBeNull();
    expect((await create({ name: 'no-deadline-2', sectors: [] })).expiresAt).toBeNull();
  });

  it.each([0, 3651, -5, 1.5, '30', true])('refuses expiresInDays %j, naming the field and the range', async (expiresInDays) => {
    await expectInvalid(await send('POST', '/api/agents', { name: 'bad-days', sectors: [], expiresInDays }), 'expiresInDays', AGENT_RULES.expiresInDays);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['with a space', 'my agent'],
    ['with a slash', 'a/b'],
    ['starting with a dot', '.hidden'],
    ['65 characters long', 'a'.repeat(65)],
    ['a number', 42],
  ])('refuses a name that is %s, naming the field and the rule', async (_label, name) => {
    await expectInvalid(await send('POST', '/api/agents', { name, sectors: [] }), 'name', AGENT_RULES.name);
  });

  it('refuses the name the audit record keeps for Console acts', async () => {
    await expectInvalid(await send('POST', '/api/agents', { name: 'Operator', sectors: [] }), 'name', AGENT_RULES.reservedName);
  });

  it('accepts a 64-character name of letters, digits, dots, underscores and dashes', async () => {
    await create({ name: `A1._-${'x'.repeat(59)}`, sectors: [] });
  });

  it.each([
    ['missing', undefined, 'sectors'],
    ['a string', 'finance', 'sectors'],
    ['an object', { finance: true }, 'sectors'],
    ['null', null, 'sectors'],
    ['an array holding a number', ['finance', 1], 'sectors.1'],
    ['an array holding an empty name', [''], 'sectors.0'],
  ])('refuses sectors that are %s, naming the field', async (_label, sectors, field) => {
    await expectInvalid(await send('POST', '/api/agents', { name: 'bad-sectors', sectors }), field, AGENT_RULES.sectors);
  });

  it('refuses an unknown field, so a misspelt deadline cannot create a key that never expires', async () => {
    const response = await send('POST', '/api/agents', { name: 'typo', sectors: [], expiresInDay: 30 });
    expect(response.statusCode).toBe(400);
    expect(response.json<Json>().error).toBe('invalid body: unknown field "expiresInDay"; allowed fields: name, sectors, expiresInDays');
    expect(await listed('typo')).toBeUndefined();
  });

  it('refuses a missing body', async () => {
    const response = await send('POST', '/api/agents');
    expect(response.statusCode).toBe(400);
    expect(response.json<Json>().error).toBe('invalid body: must be a JSON object');
  });
});

describe('GET /api/agents', () => {
  it('lists grants with their status and without a key or a key hash', async () => {
    const { key } = await create({ name: 'listed', sectors: ['calendar'], expiresInDays: 7 });
    const response = await send('GET', '/api/agents');
    const hash = hashAgentKey(key);
    for (const secret of [key, key.slice(AGENT_KEY_PREFIX.length), hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')]) {
      expect(response.body).not.toContain(secret);
    }
    const agent = response.json<Json[]>().find((entry) => entry.name === 'listed');
    expect(agent).toEqual({
      name: 'listed',
      sectors: ['calendar'],
      createdAt: expect.any(String),
      expiresAt: new Date(clock.getTime() + 7 * DAY_MS).toISOString(),
      revokedAt: null,
      updatedAt: expect.any(String),
      status: 'active',
    });
  });

  it('cannot serialise a key hash even when one is handed to the answer', async () => {
    const probe = Fastify();
    probe.setSerializerCompiler(serializerCompiler);
    const hash = hashAgentKey('pcg_probe');
    const row = { name: 'probe', sectors: [], createdAt: clock.toISOString(), expiresAt: null, revokedAt: null, updatedAt: clock.toISOString() };
    probe.withTypeProvider<ZodTypeProvider>().get('/', { schema: { response: { 200: z.array(AgentViewSchema) } } }, async () => [
      { ...row, status: 'active' as const, keyHash: hash, key_hash: hash, key: 'pcg_probe' },
    ]);
    const response = await probe.inject({ method: 'GET', url: '/' });
    await probe.close();
    expect(response.json()).toEqual([{ ...row, status: 'active' }]);
  });

  it('reports a grant past its deadline as expired', async () => {
    await create({ name: 'short-lived', sectors: [], expiresInDays: 1 });
    clock = new Date(clock.getTime() + 2 * DAY_MS);
    try {
      expect((await listed('short-lived'))?.status).toBe('expired');
    } finally {
      clock = new Date(clock.getTime() - 2 * DAY_MS);
    }
  });
});

describe('PATCH /api/agents/:name', () => {
  it('edits sectors and the deadline, answering the grant without its key', async () => {
    const { key } = await create({ name: 'editable', sectors: ['finance'] });
    const response = await send('PATCH', '/api/agents/editable', { sectors: ['mail', 'bogus'], expiresInDays: 90 });
    expect(response.statusCode).toBe(200);
    expect(response.body).not.toContain(key);
    expect(response.json()).toMatchObject({
      name: 'editable',
      sectors: ['mail', 'bogus'],
      expiresAt: new Date(clock.getTime() + 90 * DAY_MS).toISOString(),
      status: 'active',
    });
    expect(await resolver.resolveKey(key, clock)).toMatchObject({ ok: true, grant: { sectors: ['mail'] } });

    const cleared = await send('PATCH', '/api/agents/editable', { expiresInDays: null, name: 'editable' });
    expect(cleared.json()).toMatchObject({ expiresAt: null, sectors: ['mail', 'bogus'] });
  });

  it('refuses "*" (only POST /api/agents writes it), an empty edit and a rename', async () => {
    await create({ name: 'strict-edit', sectors: [] });
    await expectInvalid(await send('PATCH', '/api/agents/strict-edit', { sectors: ['*'] }), 'sectors', AGENT_RULES.wildcardInPatch);
    await expectInvalid(await send('PATCH', '/api/agents/strict-edit', { name: 'other', sectors: ['mail'] }), 'name', AGENT_RULES.renameInPatch);
    const empty = await send('PATCH', '/api/agents/strict-edit', {});
    expect(empty.statusCode).toBe(400);
    expect(empty.json<Json>().error).toBe(`invalid body: ${AGENT_RULES.emptyPatch}`);
    await expectInvalid(await send('PATCH', '/api/agents/strict-edit', { expiresInDays: 0 }), 'expiresInDays', AGENT_RULES.expiresInDays);
    expect((await listed('strict-edit'))?.sectors).toEqual([]);
  });

  it('answers 404 for an unknown agent and 400 for a malformed name', async () => {
    const missing = await send('PATCH', '/api/agents/nobody', { sectors: [] });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: "no agent named 'nobody'", code: 'not_found' });
    const malformed = await send('PATCH', '/api/agents/bad%20name', { sectors: [] });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ error: `invalid params: 'name' ${AGENT_RULES.name}`, code: 'validation_failed' });
  });
});

describe('rotate, revoke, delete', () => {
  it('rotate answers a new key once; the old key is refused', async () => {
    const { key } = await create({ name: 'rotating', sectors: ['home'] });
    const response = await send('POST', '/api/agents/rotating/rotate');
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    const rotated = response.json<{ key: string }>();
    expect(Object.keys(rotated).sort()).toEqual(['createdAt', 'expiresAt', 'key', 'name', 'sectors']);
    expect(await resolver.resolveKey(key, clock)).toEqual({ ok: false, reason: 'unknown agent' });
    expect(await resolver.resolveKey(rotated.key, clock)).toMatchObject({ ok: true });
    const listing = await send('GET', '/api/agents');
    expect(listing.body).not.toContain(rotated.key);
  });

  it('revoke answers the revoked grant; the key is refused with revoked; rotating it is a conflict', async () => {
    const { key } = await create({ name: 'revoking', sectors: ['home'] });
    const response = await send('POST', '/api/agents/revoking/revoke');
    expect(response.statusCode).toBe(200);
    expect(response.body).not.toContain(key);
    expect(response.json()).toMatchObject({ name: 'revoking', status: 'revoked', revokedAt: expect.any(String) });
    expect(await resolver.resolveKey(key, clock)).toEqual({ ok: false, reason: 'revoked' });
    const rotate = await send('POST', '/api/agents/revoking/rotate');
    expect(rotate.statusCode).toBe(409);
    expect(rotate.body).not.toMatch(/pcg_/);
  });

  it('delete answers 204; the key is then unknown and the name is gone', async () => {
    const { key } = await create({ name: 'deleting', sectors: ['home'] });
    const response = await send('DELETE', '/api/agents/deleting');
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    expect(await resolver.resolveKey(key, clock)).toEqual({ ok: false, reason: 'unknown agent' });
    expect(await listed('deleting')).toBeUndefined();
    expect((await send('DELETE', '/api/agents/deleting')).statusCode).toBe(404);
  });

  it.each(['rotate', 'revoke'])('%s of an unknown agent answers 404', async (act) => {
    expect((await send('POST', `/api/agents/nobody/${act}`)).statusCode).toBe(404);
  });
});

describe('side effects', () => {
  it('publishes each change on <prefix>agent-events', async () => {
    const before = published.length;
    await create({ name: 'announced', sectors: [] });
    await send('POST', '/api/agents/announced/rotate');
    await send('PATCH', '/api/agents/announced', { sectors: ['mail'] });
    await send('POST', '/api/agents/announced/revoke');
    await send('DELETE', '/api/agents/announced');
    const events = await waitFor(() => {
      const mine = published.slice(before).map((message) => JSON.parse(message) as Json).filter((event) => event.agent === 'announced');
      return mine.length >= 5 ? mine : undefined;
    });
    expect(events.map((event) => event.kind)).toEqual(['created', 'rotated', 'sectors_changed', 'revoked', 'deleted']);
  });

  it('writes no audit row and queues nothing for the audit writer (spec 6)', async () => {
    await create({ name: 'unaudited', sectors: ['mail'] });
    await send('POST', '/api/agents', { name: 'unaudited', sectors: ['mail'] });
    await send('POST', '/api/agents/unaudited/rotate');
    await send('PATCH', '/api/agents/unaudited', { expiresInDays: 30 });
    await send('POST', '/api/agents/unaudited/revoke');
    await send('DELETE', '/api/agents/unaudited');
    expect(await testEnv.db.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM audit_log`)).toBe(0);
    const raw = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: '' }, 'commands');
    try {
      expect(await raw.keys(`${testEnv.redisPrefix}*`)).toEqual([]);
    } finally {
      await raw.quit();
    }
  });

  it('sits behind the Host check', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/agents', headers: { host: 'localhost.evil.com' } });
    expect(response.statusCode).toBe(403);
    expect(response.body).toBe('{"error":"forbidden host"}');
  });
});
