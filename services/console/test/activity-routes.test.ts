import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { rollUpActivityOnce } from '@pcg/shared/activity';
import { buildAuditRow, insertAuditRows } from '@pcg/shared/audit';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { collectingAudit } from './helpers.ts';

const testEnv = useTestEnvironment();
const audit = collectingAudit();
let app: FastifyInstance;
const HOST = { host: 'localhost' };

const call = (agentId: string, sector: string, decision: 'allow' | 'deny', object?: string) =>
  buildAuditRow({ agentId, tool: 'query', sector, decision, denyReason: decision === 'deny' ? 'sector not granted' : null, args: object ? { object } : {}, outcome: 'ok' }).row;

beforeAll(async () => {
  app = buildApp({ config: loadConfig(consoleConfigSchema, testEnv.env()), log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, audit: audit.recorder });
  await app.ready();
  // The first pass takes the (empty) record as its baseline; what follows is new.
  await rollUpActivityOnce(testEnv.db);
  await insertAuditRows(testEnv.db, [call('claude', 'finance', 'allow', 'finance.account'), call('claude', 'finance', 'allow'), ...Array.from({ length: 10 }, () => call('claude', 'mail', 'deny'))]);
  await rollUpActivityOnce(testEnv.db);
});
afterAll(async () => {
  await app.close();
});

describe('Console activity and alert routes (issue 41)', () => {
  it('GET /api/activity answers calls per day per agent and sector with refusals, first and last uses, and each connection’s freshness', async () => {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO connections (user_id, provider, sector, display_name, sync_interval_minutes, last_synced_at)
      VALUES (1, 'google', 'calendar', 'Stale calendar', 60, now() - interval '3 hours'), (1, 'google', 'mail', 'Fresh mail', 60, now() - interval '5 minutes')`);
    const response = await app.inject({ method: 'GET', url: '/api/activity', headers: HOST });
    expect(response.statusCode).toBe(200);
    const view = response.json();
    const today = new Date().toISOString().slice(0, 10);
    expect(view.days).toHaveLength(30);
    expect(view.days.at(-1)).toBe(today);
    expect(view.daily).toEqual([
      { day: today, agent: 'claude', sector: 'finance', calls: 2, denied: 0 },
      { day: today, agent: 'claude', sector: 'mail', calls: 10, denied: 10 },
    ]);
    expect(view.sectorUses).toEqual([expect.objectContaining({ agent: 'claude', sector: 'finance', calls: 2 })]);
    expect(view.objectUses).toEqual([expect.objectContaining({ agent: 'claude', sector: 'finance', object: 'finance.account', calls: 1 })]);
    const byName = Object.fromEntries(view.connections.map((connection: { displayName: string }) => [connection.displayName, connection]));
    expect(byName['Stale calendar']).toMatchObject({ intervalMinutes: 60, ageMinutes: 180, fresh: false });
    expect(byName['Fresh mail']).toMatchObject({ intervalMinutes: 60, ageMinutes: 5, fresh: true });
  });

  it('GET /api/alerts lists the alerts newest first with their state, and /api/alerts/count the new ones', async () => {
    const listed = (await app.inject({ method: 'GET', url: '/api/alerts', headers: HOST })).json();
    expect(listed.map((alert: { kind: string; sector: string | null }) => [alert.kind, alert.sector]).sort()).toEqual([
      ['first_object', 'finance'],
      ['first_sector', 'finance'],
      ['refusal_burst', null],
    ]);
    expect(listed.every((alert: { state: string }) => alert.state === 'new')).toBe(true);
    // Each alert in the words its notification uses, so the page and the notification never say it twice over.
    expect(listed.map((alert: { text: string }) => alert.text).sort()).toEqual([
      'claude read finance.account (finance) for the first time',
      'claude used finance for the first time',
      expect.stringMatching(/^claude was refused 10 times within \d+ minutes$/),
    ]);
    expect((await app.inject({ method: 'GET', url: '/api/alerts/count', headers: HOST })).json()).toEqual({ new: 3 });
  });

  it('POST /api/alerts/:id/seen marks one alert seen (204), 404 for no such alert, 400 for a malformed id; POST /api/alerts/seen marks all; each act leaves one operator row (spec 6: Console acts)', async () => {
    const [first] = (await app.inject({ method: 'GET', url: '/api/alerts', headers: HOST })).json();
    expect((await app.inject({ method: 'POST', url: `/api/alerts/${first.id}/seen`, headers: HOST })).statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: '/api/alerts/count', headers: HOST })).json()).toEqual({ new: 2 });
    const listed = (await app.inject({ method: 'GET', url: '/api/alerts', headers: HOST })).json();
    expect(listed.find((alert: { id: string }) => alert.id === first.id).state).toBe('seen');
    expect((await app.inject({ method: 'POST', url: '/api/alerts/987654/seen', headers: HOST })).statusCode).toBe(404);
    expect((await app.inject({ method: 'POST', url: '/api/alerts/abc/seen', headers: HOST })).statusCode).toBe(400);
    expect((await app.inject({ method: 'POST', url: '/api/alerts/seen', headers: HOST })).statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: '/api/alerts/count', headers: HOST })).json()).toEqual({ new: 0 });
    expect(audit.events).toEqual([
      expect.objectContaining({ agentId: 'operator', tool: 'acknowledge_alerts', sector: null, decision: 'allow', outcome: 'ok', args: { alert: first.id } }),
      expect.objectContaining({ agentId: 'operator', tool: 'acknowledge_alerts', sector: null, decision: 'allow', outcome: 'ok', args: { all: true } }),
    ]);
  });

  it('refuses marking alerts seen from another site', async () => {
    const response = await app.inject({ method: 'POST', url: '/api/alerts/seen', headers: { ...HOST, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
    expect(response.statusCode).toBe(403);
  });
});
