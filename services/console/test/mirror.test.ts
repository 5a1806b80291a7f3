import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAuditProducer } from '@pcg/shared/audit';
import { upsertRecords } from '@pcg/shared/cache';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { createKeyResolver, type Grant } from '@pcg/shared/grants';
import { createQueryEngine, EXPECTED_DATE, EXPECTED_INSTANT, EXPECTED_TEXT } from '@pcg/shared/query';
import { createReadService, QUERY_BODY_EXPECTED } from '@pcg/shared/reads';
import {
  collectQueuedAuditRows,
  createCapturingLogger,
  createTestAgent,
  insertTestConnection,
  takeQueuedAuditRows,
  useTestEnvironment,
} from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { MIRROR_MISSING_KEY } from '../src/routes/mirror.ts';

const testEnv = useTestEnvironment();
let app: FastifyInstance;
let financeKey: string;
let grant: Grant;

beforeAll(async () => {
  const config = loadConfig(consoleConfigSchema, testEnv.env({ SERVICE_NAME: 'pcg-mirror' }));
  app = buildApp({ config, log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis });
  await app.ready();
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, {
    object: 'finance.transaction',
    connectionId: bank,
    source: 'plaid',
    records: Array.from({ length: 7 }, (_, i) => ({ source_id: `t${i}`, amount: `-${i}.50`, posted_on: `2026-03-0${i + 1}`, pending: false })),
  });
  financeKey = await createTestAgent(testEnv.db, { name: 'mirror-agent', sectors: ['finance'] });
  const resolved = await createKeyResolver({ db: testEnv.db, direct: testEnv.direct }).resolveKey(financeKey);
  if (!resolved.ok) throw new Error('test key did not resolve');
  grant = resolved.grant;
});
afterAll(async () => app.close());
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
// The mirror has no Host check (spec 5), so even a foreign Host is served.
const foreignHost = { host: 'evil.example' };

describe('read mirror keys (spec 5, 7)', () => {
  it.each([
    ['no Authorization header', {}],
    ['Bearer with no key', { authorization: 'Bearer   ' }],
    ['another scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['a malformed key', { authorization: 'Bearer not-a-key' }],
  ])('answers 401 for %s and leaves no audit row', async (_label, headers) => {
    const response = await app.inject({ method: 'GET', url: '/api/context', headers: { ...headers, ...foreignHost } });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ error: MIRROR_MISSING_KEY });
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
  });

  it('answers 403 for an unknown key and leaves no audit row', async () => {
    const unknown = `pcg_${'A'.repeat(43)}`;
    const response = await app.inject({ method: 'POST', url: '/api/query', headers: bearer(unknown), payload: { object: 'finance.transaction' } });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({ error: 'access denied: unknown agent' });
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
  });

  it('answers 403 for a revoked key, re-resolving it on every request', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'soon-revoked', sectors: ['finance'] });
    expect((await app.inject({ method: 'GET', url: '/api/context', headers: bearer(key) })).statusCode).toBe(200);
    await app.inject({ method: 'POST', url: '/api/agents/soon-revoked/revoke', headers: { host: 'localhost' } });
    await takeQueuedAuditRows(testEnv.redis);
    const response = await app.inject({ method: 'GET', url: '/api/context', headers: bearer(key) });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({ error: 'access denied: revoked' });
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
  });
});

describe('read mirror: the key is checked before anything about the body (spec 5, 7)', () => {
  const basic = { authorization: `Basic ${Buffer.from('foo:bar').toString('base64')}` };
  const unknown = { authorization: `Bearer pcg_${'B'.repeat(43)}` };

  it.each([
    ['Basic credentials and a body with no content type', 401, basic, undefined, '{"object":"finance.transaction"}'],
    ['Basic credentials and an XML body', 401, basic, 'application/xml', '<query/>'],
    ['no key and a text/plain body', 401, {}, 'text/plain', 'hello'],
    ['no key and JSON that does not parse', 401, {}, 'application/json', '{"object":'],
    ['an unknown key and an XML body', 403, unknown, 'application/xml', '<query/>'],
    ['an unknown key and JSON that does not parse', 403, unknown, 'application/json', '{"object":'],
  ])('POST /api/fetch_live and /api/query with %s → %i, not 415 or 400', async (_case, status, headers, contentType, payload) => {
    for (const url of ['/api/fetch_live', '/api/query']) {
      const typed = contentType === undefined ? {} : { 'content-type': contentType };
      const response = await app.inject({ method: 'POST', url, headers: { ...headers, ...typed }, payload });
      expect(response.statusCode, url).toBe(status);
      expect(response.json()).toMatchObject({ error: status === 401 ? MIRROR_MISSING_KEY : 'access denied: unknown agent' });
    }
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
  });

  it('answers a revoked key 403 before validating parameters or the query string', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'revoked-before-body', sectors: ['finance'] });
    await app.inject({ method: 'POST', url: '/api/agents/revoked-before-body/revoke', headers: { host: 'localhost' } });
    const longId = await app.inject({ method: 'GET', url: `/api/records/finance.transaction/${'x'.repeat(600)}`, headers: bearer(key) });
    expect(longId.statusCode).toBe(403);
    const longSector = await app.inject({ method: 'GET', url: `/api/schema?sector=${'s'.repeat(100)}`, headers: basic });
    expect(longSector.statusCode).toBe(401);
  });

  it('still answers a standing key 415 for a body it cannot read, and 400 naming a record id too long', async () => {
    const response = await app.inject({ method: 'POST', url: '/api/query', headers: { ...bearer(financeKey), 'content-type': 'application/xml' }, payload: '<query/>' });
    expect(response.statusCode).toBe(415);
    const longId = await app.inject({ method: 'GET', url: `/api/records/finance.transaction/${'x'.repeat(600)}`, headers: bearer(financeKey) });
    expect(longId.statusCode).toBe(400);
    expect(longId.json()).toMatchObject({ code: 'validation_failed' });
    expect(JSON.stringify(longId.json())).toContain("'id'");
  });

  it('answers a URL that does not decode with 401 or 403 for a missing or refused key, and 400 only for a standing one', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'revoked-bad-url', sectors: ['finance'] });
    await app.inject({ method: 'POST', url: '/api/agents/revoked-bad-url/revoke', headers: { host: 'localhost' } });
    const undecodable = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/records/home/%', headers });
    const missing = await undecodable({});
    expect({ status: missing.statusCode, body: missing.json() }).toMatchObject({ status: 401, body: { error: MIRROR_MISSING_KEY } });
    const revoked = await undecodable(bearer(key));
    expect({ status: revoked.statusCode, body: revoked.json() }).toMatchObject({ status: 403, body: { error: 'access denied: revoked' } });
    const standing = await undecodable(bearer(financeKey));
    expect({ status: standing.statusCode, body: standing.json() }).toMatchObject({ status: 400, body: { code: 'bad_url' } });
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
  });
});

describe('read mirror: expired keys and no throttling (spec 3.1, 5 rule 9, 7, 8)', () => {
  it('answers 403 access denied: expired once the deadline has passed, on every read, and leaves no audit row', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'soon-expired', sectors: ['finance'], expiresInDays: 30 });
    expect((await app.inject({ method: 'GET', url: '/api/context', headers: bearer(key) })).statusCode).toBe(200);
    await testEnv.db.query(sql.unsafe`UPDATE agents SET expires_at = now() - interval '1 second' WHERE name = 'soon-expired'`);
    await takeQueuedAuditRows(testEnv.redis);
    const reads = [
      { method: 'GET', url: '/api/context' },
      { method: 'GET', url: '/api/schema?sector=finance' },
      { method: 'POST', url: '/api/query', payload: { object: 'finance.transaction' } },
      { method: 'GET', url: '/api/records/finance/x' },
      { method: 'POST', url: '/api/fetch_live', payload: { object: 'finance.account' } },
    ] as const;
    for (const read of reads) {
      const response = await app.inject({ ...read, headers: bearer(key) });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toMatchObject({ error: 'access denied: expired' });
    }
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
  });

  it('never throttles a wrong key: 200 in a row all get 403 (never 429), and the right key is served right after', async () => {
    const wrong = `pcg_${'B'.repeat(43)}`;
    const statuses = new Set<number>();
    for (let i = 0; i < 200; i += 1) {
      statuses.add((await app.inject({ method: 'POST', url: '/api/query', headers: bearer(wrong), payload: { object: 'finance.transaction' } })).statusCode);
    }
    expect([...statuses]).toEqual([403]);
    const right = await app.inject({ method: 'POST', url: '/api/query', headers: bearer(financeKey), payload: { object: 'finance.transaction', limit: 1 } });
    expect(right.statusCode).toBe(200);
    expect(right.json()).toMatchObject({ row_count: 1 });
  });

  it('never throttles the mirror itself: 300 reads in a row with a good key are all served', async () => {
    const statuses = new Set<number>();
    for (let i = 0; i < 300; i += 1) statuses.add((await app.inject({ method: 'GET', url: '/api/context', headers: bearer(financeKey) })).statusCode);
    expect([...statuses]).toEqual([200]);
    await takeQueuedAuditRows(testEnv.redis);
  });
});

describe('read mirror answers (spec 4.4, 6)', () => {
  const service = () =>
    createReadService({
      db: testEnv.db,
      engine: createQueryEngine({ db: testEnv.db, direct: testEnv.direct }),
      audit: createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 1000 }, log: createCapturingLogger().log }),
      log: createCapturingLogger().log,
      serviceName: 'pcg-mirror',
    });

  it('serves the same query answer as the service layer, and records an allow row', async () => {
    const body = { object: 'finance.transaction', order_by: [{ field: 'posted_on', direction: 'asc' }], limit: 3 };
    const response = await app.inject({ method: 'POST', url: '/api/query', headers: { ...bearer(financeKey), ...foreignHost }, payload: body });
    expect(response.statusCode).toBe(200);
    const direct = await service().query({ kind: 'agent', grant }, body);
    const served = response.json() as typeof direct;
    expect({ ...served, next_cursor: undefined }).toEqual({ ...direct, next_cursor: undefined });
    expect(served.has_more).toBe(true);
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.agentId === 'mirror-agent');
    expect(rows[0]).toMatchObject({ tool: 'query', decision: 'allow', outcome: 'ok', sector: 'finance', resultCount: 3 });
  });

  it('pages with the next_cursor it returned', async () => {
    const first = (await app.inject({ method: 'POST', url: '/api/query', headers: bearer(financeKey), payload: { object: 'finance.transaction', limit: 5 } })).json() as { next_cursor: string; rows: unknown[] };
    const second = (await app.inject({ method: 'POST', url: '/api/query', headers: bearer(financeKey), payload: { object: 'finance.transaction', limit: 5, cursor: first.next_cursor } })).json() as { rows: unknown[]; has_more: boolean };
    expect(first.rows).toHaveLength(5);
    expect(second).toMatchObject({ has_more: false });
    expect(second.rows).toHaveLength(2);
  });

  it('denies an ungranted sector with 403 and leaves a deny row', async () => {
    const response = await app.inject({ method: 'POST', url: '/api/query', headers: bearer(financeKey), payload: { object: 'mail.message' } });
    expect(response.statusCode).toBe(403);
    expect(response.json().error).toMatch(/sector 'mail' is not granted/);
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.sector === 'mail');
    expect(rows).toMatchObject([{ agentId: 'mirror-agent', tool: 'query', decision: 'deny', denyReason: 'sector not granted', sector: 'mail' }]);
  });

  it('serves context, schema, a record by sector and the no-connection fetch_live message', async () => {
    const context = (await app.inject({ method: 'GET', url: '/api/context', headers: bearer(financeKey) })).json();
    expect(context).toMatchObject({ service: 'pcg-mirror', sectors: ['finance'] });
    const schema = (await app.inject({ method: 'GET', url: '/api/schema?sector=finance', headers: bearer(financeKey) })).json() as { objects: Array<{ name: string }> };
    expect(schema.objects.map((object) => object.name)).toEqual(['finance.account', 'finance.transaction', 'finance.holding']);
    const [row] = ((await app.inject({ method: 'POST', url: '/api/query', headers: bearer(financeKey), payload: { object: 'finance.transaction', limit: 1 } })).json() as { rows: Array<{ id: string }> }).rows;
    const record = await app.inject({ method: 'GET', url: `/api/records/finance/${row?.id}`, headers: bearer(financeKey) });
    expect(record.json()).toMatchObject({ object: 'finance.transaction', record: { id: row?.id } });
    expect((await app.inject({ method: 'GET', url: '/api/records/finance/missing', headers: bearer(financeKey) })).statusCode).toBe(404);
    const key = await createTestAgent(testEnv.db, { name: 'home-agent', sectors: ['home'] });
    const live = await app.inject({ method: 'POST', url: '/api/fetch_live', headers: bearer(key), payload: { object: 'home.entity' } });
    expect(live.json()).toMatchObject({ error: "no active connection for sector 'home'" });
  });

  it('offers no invoke_action on the mirror', async () => {
    expect((await app.inject({ method: 'POST', url: '/api/invoke_action', headers: bearer(financeKey), payload: {} })).statusCode).toBe(404);
  });
});

describe('operator inspector (spec 4.4, 6)', () => {
  it('reads every sector through the same engine, behind the Host check, with no audit row', async () => {
    const local = { host: '127.0.0.1:8787' };
    const context = (await app.inject({ method: 'GET', url: '/api/operator/context', headers: local })).json();
    expect(context.sectors).toEqual(['finance', 'health', 'mail', 'contacts', 'calendar', 'home']);
    const page = (await app.inject({ method: 'POST', url: '/api/data/finance', headers: local, payload: { object: 'finance.transaction', limit: 2 } })).json() as { rows: Array<{ id: string }> };
    expect(page.rows).toHaveLength(2);
    expect((await app.inject({ method: 'GET', url: `/api/data/finance/${page.rows[0]?.id}`, headers: local })).statusCode).toBe(200);
    const schema = (await app.inject({ method: 'GET', url: '/api/operator/schema', headers: local })).json() as { objects: unknown[] };
    expect(schema.objects).toHaveLength(10);
    expect(await takeQueuedAuditRows(testEnv.redis)).toEqual([]);
    expect((await app.inject({ method: 'GET', url: '/api/operator/context', headers: foreignHost })).statusCode).toBe(403);
    const wrongSector = await app.inject({ method: 'POST', url: '/api/data/mail', headers: local, payload: { object: 'finance.transaction' } });
    expect(wrongSector.statusCode).toBe(400);
  });
});

describe('hostile bodies and values on the mirror and the inspector (issue 12 items 2, 9)', () => {
  const local = { host: '127.0.0.1:8787' };
  const query = (payload: unknown, headers: Record<string, string> = bearer(financeKey)) =>
    app.inject({ method: 'POST', url: '/api/query', headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
  const inspect = (payload: unknown) =>
    app.inject({ method: 'POST', url: '/api/data/finance', headers: { ...local, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });

  it('answers 400 naming what to send for a query with no body, null or a non-object, and records the failed call', async () => {
    const noBody = await app.inject({ method: 'POST', url: '/api/query', headers: bearer(financeKey) });
    expect(noBody.statusCode).toBe(400);
    expect(noBody.json()).toMatchObject({ error: QUERY_BODY_EXPECTED });
    for (const payload of [null, [], 'finance.transaction', 7]) {
      const response = await query(payload);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: QUERY_BODY_EXPECTED });
    }
    // The producer pushes off the response path: collect until all five have landed.
    const rows = await collectQueuedAuditRows(testEnv.redis, 5, (row) => row.agentId === 'mirror-agent');
    expect(rows).toHaveLength(5);
    expect(rows.every((row) => row.tool === 'query' && row.decision === 'allow' && row.outcome === 'error')).toBe(true);
  });

  it('answers 400 naming the object to send for an inspector query with no body or null', async () => {
    const noBody = await app.inject({ method: 'POST', url: '/api/data/finance', headers: local });
    expect(noBody.statusCode).toBe(400);
    expect(noBody.json().error).toMatch(/^object: name an object of sector 'finance'/);
    for (const payload of [null, [], 'finance.transaction']) {
      const response = await inspect(payload);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatch(/^object: name an object of sector 'finance'/);
    }
  });

  it.each([
    ['February 30th', 'posted_on', '2026-02-30', `where.0.value: posted_on is date; expected ${EXPECTED_DATE}`],
    ['April 31st', 'posted_on', '2026-04-31', 'where.0.value: posted_on is date'],
    ['year 0000', 'posted_on', '0000-01-01', 'where.0.value: posted_on is date'],
    ['an instant in year 10000', 'synced_at', '10000-01-01', `where.0.value: synced_at is timestamp; expected ${EXPECTED_INSTANT}`],
    ['the last instant JavaScript holds', 'synced_at', '275760-09-13', 'where.0.value: synced_at is timestamp'],
    ['a negative year', 'synced_at', '-000001-01-01T00:00:00Z', 'where.0.value: synced_at is timestamp'],
    ['a NUL', 'description', 'a\u0000b', `where.0.value: description is string; expected ${EXPECTED_TEXT}`],
    ['an unpaired surrogate', 'description', '\ud800', `where.0.value: description is string; expected ${EXPECTED_TEXT}`],
  ])('answers 400 naming the field for %s, on the mirror and the inspector', async (_label, field, value, message) => {
    const body = { object: 'finance.transaction', where: [{ field, op: 'gte', value }] };
    for (const response of [await query(body), await inspect(body)]) {
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toContain(message);
    }
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.agentId === 'mirror-agent');
    expect(rows).toMatchObject([{ tool: 'query', decision: 'allow', outcome: 'error', sector: 'finance' }]);
  });

  it('answers 400 for a record id or a live id with a NUL or an unpaired surrogate', async () => {
    for (const id of ['a%00b', '%ED%A0%80']) {
      const record = await app.inject({ method: 'GET', url: `/api/records/finance/${id}`, headers: bearer(financeKey) });
      expect(record.statusCode).toBeGreaterThanOrEqual(400);
      expect(record.statusCode).toBeLessThan(500);
    }
    const record = await app.inject({ method: 'GET', url: '/api/records/finance/a%00b', headers: bearer(financeKey) });
    expect(record.statusCode).toBe(400);
    expect(record.json().error).toContain(EXPECTED_TEXT);
    const fetched = await app.inject({
      method: 'POST',
      url: '/api/fetch_live',
      headers: { ...bearer(financeKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ object: 'finance.account', id: 'x\u0000' }),
    });
    expect(fetched.statusCode).toBe(400);
    expect(fetched.json().error).toContain(`id: ${EXPECTED_TEXT}`);
  });
});
