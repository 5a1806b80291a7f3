import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '@pcg/shared/cache';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { CROSS_SITE_REFUSED } from '../src/web/cross-site.ts';
import { CONSOLE_CSP } from '../src/web/security-headers.ts';
import { collectingAudit } from './helpers.ts';

const testEnv = useTestEnvironment();
const audit = collectingAudit();
let app: FastifyInstance;

beforeAll(async () => {
  const config = loadConfig(consoleConfigSchema, testEnv.env({}));
  app = buildApp({ config, log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, audit: audit.recorder });
  await app.ready();
  const hub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
  await upsertRecords(testEnv.db, {
    object: 'home.entity',
    connectionId: hub,
    source: 'home-assistant',
    records: [
      { source_id: 'sensor.a', entity_id: 'sensor.a', domain: 'sensor', state: '=1+1', attributes: {} },
      { source_id: 'sensor.b', entity_id: 'sensor.b', domain: 'sensor', state: '21', attributes: {} },
    ],
  });
});
afterAll(async () => app?.close());

const HOST = { host: '127.0.0.1:8787' };

describe('the Console page', () => {
  it('is served at / with the strict headers, its scripts as JavaScript from the same port', async () => {
    const page = await app.inject({ method: 'GET', url: '/', headers: HOST });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.body).not.toMatch(/<script>|https?:\/\/(?!127)/);
    const script = await app.inject({ method: 'GET', url: '/assets/dom.ts', headers: HOST });
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
    expect(script.body).toMatch(/export function h\s*\(/);
    expect(script.body).not.toContain('keyof HTMLElementTagNameMap');
    expect((await app.inject({ method: 'GET', url: '/assets/tsconfig.json', headers: HOST })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/assets/..%2Fsrc%2Fapp.ts', headers: HOST })).statusCode).toBe(404);
    // JSON answers carry the headers too.
    expect((await app.inject({ method: 'GET', url: '/api/agents', headers: HOST })).headers['content-security-policy']).toBe(CONSOLE_CSP);
  });

  it('is behind the Host check', async () => {
    expect((await app.inject({ method: 'GET', url: '/', headers: { host: 'evil.example' } })).statusCode).toBe(403);
  });

  it('lists the provider descriptors as data, with the JSON Schema of what the operator types', async () => {
    const answer = await app.inject({ method: 'GET', url: '/api/providers', headers: HOST });
    expect(answer.statusCode, answer.body).toBe(200);
    const { providers } = answer.json<{ providers: Array<{ kind: string; signIn: string; credentials: { properties?: Record<string, unknown>; required?: string[] } | null }> }>();
    expect(providers.find((provider) => provider.kind === 'home-assistant')).toMatchObject({ signIn: 'token', credentials: { required: ['baseUrl', 'token'] }, oauth: null });
    expect(providers.find((provider) => provider.kind === 'health-auto-export')).toMatchObject({ signIn: 'push', credentials: null, oauth: null });
    // One route serves the descriptors: the sign-in routes no longer list them a second way.
    expect((await app.inject({ method: 'GET', url: '/api/connect', headers: HOST })).statusCode).toBe(404);
  });
});

describe('the cross-site check on state-changing requests (design 7.2)', () => {
  const send = (headers: Record<string, string>, url = '/api/agents', method: 'POST' | 'PUT' = 'POST') =>
    app.inject({ method, url, headers: { ...HOST, 'content-type': 'application/json', ...headers }, payload: JSON.stringify({ name: 'cross-site-test', sectors: [] }) });

  it.each([
    ['another site', { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }],
    ['another port of this machine', { 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:9999' }],
    ['an Origin of another port, without Sec-Fetch-Site', { origin: 'http://127.0.0.1:9999' }],
    ['an opaque Origin', { origin: 'null' }],
  ])('refuses %s with 403 before acting', async (_name, headers) => {
    const answer = await send(headers);
    expect(answer.statusCode).toBe(403);
    expect(answer.json()).toEqual(CROSS_SITE_REFUSED);
    expect((await app.inject({ method: 'GET', url: '/api/agents', headers: HOST })).json()).toEqual([]);
  });

  it.each([
    ['curl (neither header)', {}],
    ['the Console page itself', { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8787' }],
    ['a typed address', { 'sec-fetch-site': 'none' }],
  ])('lets %s act', async (_name, headers) => {
    expect((await send(headers)).statusCode).toBeLessThan(300);
  });

  it('leaves reads and the routes with their own key or secret alone', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/agents', headers: { ...HOST, 'sec-fetch-site': 'cross-site' } })).statusCode).toBe(200);
    const mirror = await app.inject({ method: 'POST', url: '/api/query', headers: { ...HOST, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' }, payload: '{}' });
    expect(mirror.statusCode).toBe(401);
  });
});

describe('the operator acts the page adds', () => {
  it('exports a sector as CSV with formula escaping, and records one operator export row', async () => {
    audit.events.length = 0;
    const answer = await app.inject({ method: 'POST', url: '/api/export/home', headers: { ...HOST, 'content-type': 'application/json' }, payload: { format: 'csv' } });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-disposition']).toMatch(/^attachment; filename="home-\d{4}-\d\d-\d\d\.csv"$/);
    const lines = answer.body.trimEnd().split('\r\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]?.startsWith('object,id,')).toBe(true);
    expect(answer.body).toContain(",'=1+1,");
    expect(audit.events).toEqual([expect.objectContaining({ agentId: 'operator', tool: 'export', sector: 'home', decision: 'allow', outcome: 'ok', resultCount: 2, args: { sector: 'home', format: 'csv' } })]);
  });

  it('exports JSON Lines, one record a line named by its object', async () => {
    const answer = await app.inject({ method: 'POST', url: '/api/export/home', headers: { ...HOST, 'content-type': 'application/json' }, payload: { format: 'jsonl' } });
    const records = answer.body.trimEnd().split('\n').map((line) => JSON.parse(line) as { object: string; state: string });
    expect(records.map((record) => [record.object, record.state]).sort()).toEqual([['home.entity', '21'], ['home.entity', '=1+1']]);
  });

  it('refuses an unknown sector or format with 400 and leaves no row', async () => {
    audit.events.length = 0;
    const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, headers: { ...HOST, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
    expect((await post('/api/export/banking', { format: 'csv' })).statusCode).toBe(400);
    expect((await post('/api/export/home', { format: 'xlsx' })).statusCode).toBe(400);
    expect((await app.inject({ method: 'POST', url: '/api/export/home', headers: { ...HOST, 'content-type': 'text/plain' }, payload: '{"format":"csv"}' })).statusCode).toBeGreaterThanOrEqual(400);
    expect(audit.events).toEqual([]);
  });

  it('records the operator live read as a Console act, even when it fails', async () => {
    audit.events.length = 0;
    const answer = await app.inject({ method: 'POST', url: '/api/operator/fetch_live', headers: { ...HOST, 'content-type': 'application/json' }, payload: { object: 'mail.message' } });
    expect(answer.statusCode).toBeGreaterThanOrEqual(400);
    expect(answer.json<{ error: string }>().error).toBe("no active connection for sector 'mail'");
    expect(audit.events).toEqual([expect.objectContaining({ agentId: 'operator', tool: 'fetch_live', sector: 'mail', decision: 'allow', outcome: 'error' })]);
  });
});
