import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createDatabase, loadOrCreateSecret, sql } from '@pcg/shared/db';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { machineTimeZone, PUBLIC_ORIGIN_RULES, SET_PUBLIC_ORIGIN_TOOL, SET_TIME_ZONE_TOOL, SETTINGS_RULES, TIME_ZONE_RULES } from '@pcg/shared/settings';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { collectingAudit } from './helpers.ts';

const testEnv = useTestEnvironment();
const audit = collectingAudit();
const EVENT = '{"setting":"public_origin"}';
const published: string[] = [];
let app: FastifyInstance;
let subscriber: Redis;
let lastRequestId: string | undefined;
let savedCount = 0;

const configFor = () => loadConfig(consoleConfigSchema, testEnv.env());

beforeAll(async () => {
  app = buildApp({ config: configFor(), log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, audit: audit.recorder });
  app.addHook('onRequest', async (request) => {
    lastRequestId = request.id;
  });
  await app.ready();
  subscriber = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'subscriber');
  subscriber.on('message', (_channel: string, message: string) => published.push(message));
  await subscriber.subscribe(`${testEnv.redisPrefix}settings-events`);
});
afterAll(async () => {
  await subscriber.quit();
  await app.close();
});
beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`DELETE FROM settings WHERE name IN ('public_origin', 'time_zone')`);
  audit.events.length = 0;
});
// Every successful PUT publishes once; wait for them all so no test sees another's event.
afterEach(async () => {
  await waitFor(() => (published.length >= savedCount ? true : undefined), 5_000, 'settings events');
});

type Json = Record<string, unknown>;
/** The answer of GET and PUT with the machine's zone in force (no zone saved). */
const view = (publicOrigin: string | null, mcpUrl: string | null) => ({ publicOrigin, mcpUrl, timeZone: machineTimeZone(), timeZoneSource: 'machine' });
const get = () => app.inject({ method: 'GET', url: '/api/settings' });
const put = async (body: unknown) => {
  const response = await app.inject({ method: 'PUT', url: '/api/settings', payload: body as Json });
  if (response.statusCode === 200) savedCount += 1;
  return response;
};
const stored = async () => (await get()).json<Json>().publicOrigin;
const expect400 = async (body: unknown, error: string) => {
  const response = await put(body);
  expect(response.statusCode).toBe(400);
  expect(response.json()).toEqual({ error, code: 'validation_failed' });
};

describe('GET /api/settings', () => {
  it('starts with no public origin (bridge off)', async () => {
    const response = await get();
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(view(null, null));
  });

  it('never serves the secret rows of settings', async () => {
    const secret = (await loadOrCreateSecret(testEnv.db, 'query_cursor_key')).toString('base64');
    await loadOrCreateSecret(testEnv.db, 'audit_cursor_key');
    expect((await put({ publicOrigin: 'https://pcg.example.com' })).statusCode).toBe(200);
    const response = await get();
    expect(Object.keys(response.json<Json>()).sort()).toEqual(['mcpUrl', 'publicOrigin', 'timeZone', 'timeZoneSource']);
    expect(response.body).not.toContain(secret);
    expect(response.body).not.toMatch(/cursor_key/);
  });

  it('fails loudly rather than serve a stored value that is not a normalised origin', async () => {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO settings (user_id, name, value) VALUES (1, 'public_origin', ${sql.jsonb('https://pcg.example.com/mcp')})`);
    const response = await get();
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: 'internal error', code: 'internal' });
  });
});

describe('PUT /api/settings (spec 5 rule 8)', () => {
  it('saves the normalised origin and answers it with the address for hosted agents', async () => {
    const response = await put({ publicOrigin: 'https://PCG.Example.com:443/' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(view('https://pcg.example.com', 'https://pcg.example.com/mcp'));
    expect((await get()).json()).toEqual(view('https://pcg.example.com', 'https://pcg.example.com/mcp'));
  });

  it('keeps a non-default port', async () => {
    expect((await put({ publicOrigin: 'https://pcg.example.com:8443' })).json()).toEqual(view('https://pcg.example.com:8443', 'https://pcg.example.com:8443/mcp'));
  });

  it('clears the origin with null (bridge off)', async () => {
    await put({ publicOrigin: 'https://pcg.example.com' });
    const response = await put({ publicOrigin: null });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(view(null, null));
    expect((await get()).json()).toEqual(view(null, null));
  });

  it.each([
    ['a path', 'https://pcg.example.com/mcp', PUBLIC_ORIGIN_RULES.originOnly([PUBLIC_ORIGIN_RULES.parts.path('/mcp')], 'https://pcg.example.com')],
    ['an empty query', 'https://pcg.example.com?', PUBLIC_ORIGIN_RULES.originOnly([PUBLIC_ORIGIN_RULES.parts.query('')], 'https://pcg.example.com')],
    ['http on a public host', 'http://pcg.example.com', PUBLIC_ORIGIN_RULES.httpsRequired('https://pcg.example.com')],
    ['an empty string', '', PUBLIC_ORIGIN_RULES.notAnOrigin],
  ])('refuses %s with the parser message, keeping the stored value and leaving no audit row', async (_label, publicOrigin, error) => {
    await put({ publicOrigin: 'https://kept.example' });
    audit.events.length = 0;
    await expect400({ publicOrigin }, error);
    expect(await stored()).toBe('https://kept.example');
    expect(audit.events).toEqual([]);
  });

  it.each([
    ['an unknown field', { publicOrigin: null, bridge: true }, SETTINGS_RULES.unknownFields(['bridge'])],
    ['serviceName, pointing at SERVICE_NAME', { publicOrigin: null, serviceName: 'my-gateway' }, SETTINGS_RULES.unknownFields(['serviceName'])],
    ['a body naming no setting', {}, SETTINGS_RULES.nothing],
    ['a publicOrigin that is not a string', { publicOrigin: 443 }, `'publicOrigin' ${SETTINGS_RULES.publicOriginType}`],
  ])('refuses %s', async (_label, body, error) => {
    await expect400(body, `invalid body: ${error}`);
    expect(audit.events).toEqual([]);
  });

  it('says where the service name is set', () => {
    expect(SETTINGS_RULES.unknownFields(['serviceName'])).toBe(
      'unknown field "serviceName"; allowed fields: publicOrigin, timeZone (the service name is set by the SERVICE_NAME environment variable, not here)',
    );
  });

  it('records one operator audit row for each save and each clear', async () => {
    const saved = await put({ publicOrigin: 'https://pcg.example.com/' });
    const savedId = lastRequestId;
    const cleared = await put({ publicOrigin: null });
    const clearedId = lastRequestId;
    expect([saved.statusCode, cleared.statusCode]).toEqual([200, 200]);
    const row = { agentId: 'operator', tool: SET_PUBLIC_ORIGIN_TOOL, sector: null, decision: 'allow', outcome: 'ok' };
    expect(audit.events).toEqual([
      { ...row, args: { publicOrigin: 'https://pcg.example.com' }, requestId: savedId },
      { ...row, args: { publicOrigin: null }, requestId: clearedId },
    ]);
    expect(SET_PUBLIC_ORIGIN_TOOL).toBe('set_public_origin');
  });

  it('publishes {"setting":"public_origin"} on <prefix>settings-events after each save', async () => {
    const before = published.length;
    await put({ publicOrigin: 'https://pcg.example.com' });
    await waitFor(() => (published.length >= before + 1 ? true : undefined), 5_000, 'first event');
    await put({ publicOrigin: null });
    await waitFor(() => (published.length >= before + 2 ? true : undefined), 5_000, 'second event');
    expect(published.slice(before)).toEqual([EVENT, EVENT]);
  });
});

describe('PUT /api/settings: the person\'s time zone (issue 20, design 7.4)', () => {
  it('saves an IANA name in its canonical spelling, keeps the origin, and goes back to the machine\'s zone with null', async () => {
    await put({ publicOrigin: 'https://kept.example' });
    audit.events.length = 0;
    const saved = await put({ timeZone: 'europe/berlin' });
    expect(saved.statusCode).toBe(200);
    expect(saved.json()).toEqual({ publicOrigin: 'https://kept.example', mcpUrl: 'https://kept.example/mcp', timeZone: 'Europe/Berlin', timeZoneSource: 'setting' });
    expect((await get()).json()).toMatchObject({ timeZone: 'Europe/Berlin', timeZoneSource: 'setting' });
    const cleared = await put({ timeZone: null });
    expect(cleared.json()).toMatchObject({ publicOrigin: 'https://kept.example', timeZone: machineTimeZone(), timeZoneSource: 'machine' });
    expect(audit.events).toMatchObject([
      { agentId: 'operator', tool: SET_TIME_ZONE_TOOL, sector: null, decision: 'allow', outcome: 'ok', args: { timeZone: 'Europe/Berlin' } },
      { agentId: 'operator', tool: SET_TIME_ZONE_TOOL, outcome: 'ok', args: { timeZone: null } },
    ]);
    expect(SET_TIME_ZONE_TOOL).toBe('set_time_zone');
  });

  it.each(['+02:00', 'Mars/Olympus', 'Europe/Berlin; DROP TABLE settings', ''])('refuses %j naming the form to send, and stores neither field of the body', async (timeZone) => {
    await put({ timeZone: 'Asia/Tokyo' });
    audit.events.length = 0;
    await expect400({ timeZone, publicOrigin: 'https://other.example' }, TIME_ZONE_RULES.notAZone(timeZone));
    expect((await get()).json()).toMatchObject({ publicOrigin: null, timeZone: 'Asia/Tokyo' });
    expect(audit.events).toEqual([]);
  });

  it('refuses a zone that is not a string', async () => {
    await expect400({ timeZone: 2 }, `invalid body: 'timeZone' ${SETTINGS_RULES.timeZoneType}`);
  });
});

describe('when saving cannot complete', () => {
  it('keeps the change when the event cannot be published, and logs a warning', async () => {
    const { log, lines } = createCapturingLogger('console');
    const deadRedis = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    await deadRedis.quit();
    const offline = buildApp({ config: configFor(), log, db: testEnv.db, direct: testEnv.direct, redis: deadRedis, audit: audit.recorder });
    try {
      const response = await offline.inject({ method: 'PUT', url: '/api/settings', payload: { publicOrigin: 'https://pcg.example.com' } });
      expect(response.statusCode).toBe(200);
      expect(await stored()).toBe('https://pcg.example.com');
      const warning = lines().map((line) => JSON.parse(line) as Json).find((line) => line.msg === 'settings event not published');
      expect(warning).toMatchObject({ level: 40, setting: 'public_origin' });
      expect(audit.events).toMatchObject([{ tool: SET_PUBLIC_ORIGIN_TOOL, outcome: 'ok' }]);
    } finally {
      await offline.close();
    }
  });

  it('answers 500 and records the act with outcome error when the write fails', async () => {
    const deadDb = await createDatabase(testEnv.databaseUrl, { maximumPoolSize: 1 });
    await deadDb.end();
    const offline = buildApp({ config: configFor(), log: createCapturingLogger('console').log, db: deadDb.pool, direct: deadDb.direct, redis: testEnv.redis, audit: audit.recorder });
    try {
      const response = await offline.inject({ method: 'PUT', url: '/api/settings', payload: { publicOrigin: 'https://pcg.example.com' } });
      expect(response.statusCode).toBe(500);
      expect(response.json()).toEqual({ error: 'internal error', code: 'internal' });
      expect(await stored()).toBeNull();
      expect(audit.events).toMatchObject([{ tool: SET_PUBLIC_ORIGIN_TOOL, args: { publicOrigin: 'https://pcg.example.com' }, outcome: 'error' }]);
    } finally {
      await offline.close();
    }
  });
});

describe('the Console Host check', () => {
  it.each(['GET', 'PUT'] as const)('refuses %s /api/settings from another Host with 403 {"error":"forbidden host"}', async (method) => {
    const response = await app.inject({
      method,
      url: '/api/settings',
      headers: { host: 'evil.example' },
      ...(method === 'PUT' ? { payload: { publicOrigin: 'https://evil.example' } } : {}),
    });
    expect(response.statusCode).toBe(403);
    expect(response.body).toBe('{"error":"forbidden host"}');
    expect(await stored()).toBeNull();
    expect(audit.events).toEqual([]);
  });
});
