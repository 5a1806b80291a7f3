import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { dayStart, haePayloadV1, haePayloadV2, sendHealthPush } from '@pcg/testkit/doubles';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { z } from 'zod';
import { api, collectingAudit, startTestConsole, type TestConsole } from './helpers.ts';

const testEnv = useTestEnvironment();
const audit = collectingAudit();
const BODY_LIMIT = 64 * 1024;
let consoleService: TestConsole;
let phone: { id: string; secret: string };

const url = (id: string) => `${consoleService.address}/api/ingest/${id}`;
const counts = () =>
  testEnv.db.one(sql.type(z.object({ samples: z.number(), workouts: z.number(), nights: z.number() }))`
    SELECT (SELECT count(*)::int FROM health_samples) AS samples, (SELECT count(*)::int FROM health_workouts) AS workouts,
           (SELECT count(*)::int FROM health_sleep_sessions) AS nights`);
const raw = (id: string, headers: Record<string, string>, body: string) => fetch(url(id), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

async function createPhone(): Promise<{ id: string; secret: string }> {
  const created = await api(consoleService.address, 'POST', '/api/connections', { provider: 'health-auto-export' });
  return { id: created.json.connection.id, secret: created.json.ingestSecret };
}

beforeAll(async () => {
  consoleService = await startTestConsole(testEnv, audit.recorder, { INGEST_BODY_LIMIT_BYTES: String(BODY_LIMIT) });
  phone = await createPhone();
});
afterAll(async () => consoleService?.close());

describe('a push from the phone', () => {
  const day = dayStart(1);

  it('stores the export, with the secret as a Bearer token, and leaves one ingest row', async () => {
    const before = audit.events.length;
    const response = await sendHealthPush(url(phone.id), phone.secret, haePayloadV2(day));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ format: 'health-auto-export', accepted: { 'health.sample': 15, 'health.workout': 1, 'health.sleep_session': 1 }, skipped: 0, rejected: [] });
    expect(await counts()).toEqual({ samples: 15, workouts: 1, nights: 1 });
    expect(audit.events.slice(before)).toEqual([
      expect.objectContaining({ agentId: null, tool: 'ingest', sector: 'health', decision: 'allow', outcome: 'ok', resultCount: 17 }),
    ]);
    expect(JSON.stringify(audit.events)).not.toContain(phone.secret);
    const connection = await testEnv.db.one(sql.type(z.object({ last_synced_at: z.string().nullable() }))`SELECT last_synced_at FROM connections WHERE id = ${phone.id}::uuid`);
    expect(connection.last_synced_at).not.toBeNull();
  });

  it('creates no duplicates when the same push arrives again, through X-PCI-Webhook-Secret', async () => {
    const response = await sendHealthPush(url(phone.id), phone.secret, haePayloadV2(day), 'webhook-secret');
    expect(response.status).toBe(200);
    expect(await counts()).toEqual({ samples: 15, workouts: 1, nights: 1 });
  });

  it('keeps one row per bucket and per night when the app re-sends them naming more devices, so their steps are summed once', async () => {
    const bucketDay = dayStart(5);
    const steps = () =>
      testEnv.db.one(sql.type(z.object({ rows: z.number(), total: z.number().nullable(), devices: z.array(z.string()) }))`
        SELECT count(*)::int AS rows, sum(value)::float8 AS total, array_agg(DISTINCT device ORDER BY device) AS devices FROM health_samples
        WHERE connection_id = ${phone.id}::uuid AND metric = 'step_count'
          AND start_at >= ${new Date(bucketDay).toISOString()}::timestamptz AND start_at < ${new Date(bucketDay + 86_400_000).toISOString()}::timestamptz`);
    expect((await sendHealthPush(url(phone.id), phone.secret, haePayloadV2(bucketDay))).status).toBe(200);
    expect(await steps()).toEqual({ rows: 6, total: 345, devices: ['iPhone'] });
    const nights = () => testEnv.db.oneFirst(sql.type(z.object({ nights: z.number() }))`SELECT count(*)::int AS nights FROM health_sleep_sessions WHERE connection_id = ${phone.id}::uuid AND end_at > ${new Date(bucketDay).toISOString()}::timestamptz AND start_at < ${new Date(bucketDay + 86_400_000).toISOString()}::timestamptz`);
    expect(await nights()).toBe(1);
    expect((await sendHealthPush(url(phone.id), phone.secret, haePayloadV2(bucketDay, { stepSource: 'iPhone|Apple Watch', sleepSource: 'Apple Watch|iPhone' }))).status).toBe(200);
    expect(await steps()).toEqual({ rows: 6, total: 345, devices: ['iPhone|Apple Watch'] });
    expect(await nights()).toBe(1);
  });

  it('reads an older app version: v1 workouts without id, kcal, and sleep stage segments', async () => {
    const response = await sendHealthPush(url(phone.id), phone.secret, haePayloadV1(dayStart(2)));
    expect(await response.json()).toMatchObject({ accepted: { 'health.sample': 1, 'health.workout': 1, 'health.sleep_session': 1 } });
    const walk = await testEnv.db.one(sql.type(z.object({ sport: z.string(), energy_kcal: z.number(), duration_s: z.number() }))`
      SELECT sport, energy_kcal, duration_s FROM health_workouts WHERE sport = 'walking'`);
    expect(walk).toEqual({ sport: 'walking', energy_kcal: 150, duration_s: 1800 });
    const run = await testEnv.db.oneFirst(sql.type(z.object({ energy_kcal: z.number() }))`SELECT energy_kcal FROM health_workouts WHERE sport = 'outdoor_run'`);
    expect(run).toBe(500); // 2092 kJ
  });

  it('accepts the canonical form and ignores unknown fields', async () => {
    const response = await raw(phone.id, { authorization: `Bearer ${phone.secret}` }, JSON.stringify({
      records: [{ object: 'health.sample', source_id: 'scale|2026-03-01', metric: 'body_mass', value: 71.2, unit: 'kg', start_at: '2026-03-01T07:00:00Z', colour: 'blue' }],
    }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ format: 'records', accepted: { 'health.sample': 1 }, skipped: 0, rejected: [] });
  });

  it('never lets the payload choose another sector', async () => {
    const response = await raw(phone.id, { authorization: `Bearer ${phone.secret}` }, JSON.stringify({ records: [{ object: 'finance.transaction', source_id: 't1', amount: '-5' }] }));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toContain("not in this connection's sector 'health'");
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM finance_transactions`)).toBe(0);
  });

  it('answers malformed JSON with 400 naming the position, and audits it as a failed push', async () => {
    const before = audit.events.length;
    const response = await raw(phone.id, { authorization: `Bearer ${phone.secret}` }, '{"data": {"metrics": [}');
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('malformed JSON at position 22 (line 1, column 23): unexpected character');
    expect(audit.events.slice(before)).toEqual([expect.objectContaining({ tool: 'ingest', decision: 'allow', outcome: 'error' })]);
  });

  it('answers a body over the cap with 413', async () => {
    const response = await raw(phone.id, { authorization: `Bearer ${phone.secret}` }, JSON.stringify({ records: [], pad: 'x'.repeat(BODY_LIMIT) }));
    expect(response.status).toBe(413);
  });
});

describe('a refused push', () => {
  let paused: { id: string; secret: string };
  let unset: { id: string; secret: string };

  beforeAll(async () => {
    paused = await createPhone();
    await api(consoleService.address, 'POST', `/api/connections/${paused.id}/pause`);
    unset = await createPhone();
    await testEnv.db.query(sql.unsafe`UPDATE connections SET ingest_secret_hash = NULL WHERE id = ${unset.id}::uuid`);
  });

  const cases: Array<[string, () => [string, Record<string, string>]]> = [
    ['an unknown id', () => ['7d3c2f8e-0000-4000-8000-000000000000', { authorization: `Bearer ${phone.secret}` }]],
    ['a paused connection', () => [paused.id, { authorization: `Bearer ${paused.secret}` }]],
    ['a connection with no secret set', () => [unset.id, { authorization: `Bearer ${unset.secret}` }]],
    ['a wrong secret', () => [phone.id, { authorization: `Bearer ${phone.secret.slice(0, -1)}x` }]],
    ['a malformed id', () => ['..%2Fconnections', { authorization: `Bearer ${phone.secret}` }]],
    ['a malformed id holding a NUL', () => ['7d3c2f8e-0000-4000-8000-00000000000%00', { authorization: `Bearer ${phone.secret}` }]],
    ['a 300-digit id (past the router\'s parameter length)', () => ['9'.repeat(300), { authorization: `Bearer ${phone.secret}` }]],
    ['an id of 5000 characters', () => ['a'.repeat(5000), { authorization: `Bearer ${phone.secret}` }]],
    ['an id holding a slash', () => [`${phone.id}/more`, { authorization: `Bearer ${phone.secret}` }]],
    ['an empty id', () => ['', { authorization: `Bearer ${phone.secret}` }]],
    ['an id that is a lone percent sign', () => ['%', { authorization: `Bearer ${phone.secret}` }]],
    ['an id with invalid percent-encoding', () => ['%zz', { authorization: `Bearer ${phone.secret}` }]],
    ['an id with a truncated UTF-8 escape', () => [`${phone.id}%C3`, { authorization: `Bearer ${phone.secret}` }]],
    ['an id escaping a lone surrogate', () => ['%ED%A0%80', { authorization: `Bearer ${phone.secret}` }]],
    ['no secret', () => [phone.id, {}]],
    ['Bearer with no key', () => [phone.id, { authorization: 'Bearer ' }]],
    ["another connection's secret", () => [phone.id, { 'x-pci-webhook-secret': paused.secret }]],
  ];

  it.each(cases)('gives %s the same 401 {"error":"unauthorized"} and a deny row', async (_what, arrange) => {
    const [id, headers] = arrange();
    const before = audit.events.length;
    const response = await raw(id, headers, JSON.stringify(haePayloadV2()));
    expect(response.status).toBe(401);
    expect(await response.text()).toBe('{"error":"unauthorized"}');
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(audit.events.slice(before)).toEqual([
      expect.objectContaining({ agentId: null, tool: 'ingest', decision: 'deny', denyReason: 'unauthorized', outcome: 'error' }),
    ]);
  });

  it('answers a URL that does not decode elsewhere with 400 bad_url in the Console shape, the URL not echoed', async () => {
    const response = await fetch(`${consoleService.address}/api/agents/%zz`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: string; code: string };
    expect(body.code).toBe('bad_url');
    expect(body.error).not.toContain('%zz');
  });

  it('refuses before reading the body: an oversized push with a wrong secret is 401, not 413', async () => {
    const response = await raw(phone.id, { authorization: 'Bearer wrong' }, 'x'.repeat(BODY_LIMIT * 4));
    expect(response.status).toBe(401);
  });

  it('applies no Host check', async () => {
    const response = await sendHealthPush(url(phone.id), phone.secret, { records: [] });
    expect(response.status).toBe(200);
    const foreign = await fetch(url(phone.id), { method: 'POST', headers: { host: 'phone-relay.example', 'content-type': 'application/json', authorization: `Bearer ${phone.secret}` }, body: '{"records":[]}' });
    expect(foreign.status).toBe(200);
  });

  it('stops the old secret at once when it is rotated, and takes the new one', async () => {
    const rotated = await api(consoleService.address, 'POST', `/api/connections/${phone.id}/rotate-secret`);
    expect((await sendHealthPush(url(phone.id), phone.secret, { records: [] })).status).toBe(401);
    expect((await sendHealthPush(url(phone.id), rotated.json.ingestSecret, { records: [] })).status).toBe(200);
  });
});
