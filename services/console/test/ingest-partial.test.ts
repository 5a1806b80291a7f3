import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { PG_VALUE_RULES } from '@pcg/shared/validation';
import { api, collectingAudit, startTestConsole, type TestConsole } from './helpers.ts';

/**
 * Issue 12 items 6 and 8: one value Postgres cannot hold never costs a whole push. Good records are
 * stored and the bad ones listed by place and field (200); a push with no good record is a 400 listing
 * them; nothing stored before is lost, and the ingest audit row says what happened.
 */
const testEnv = useTestEnvironment();
const audit = collectingAudit();
let consoleService: TestConsole;
let phone: { id: string; secret: string };

const SampleRow = z.object({ source_id: z.string(), value: z.number(), start_at: z.string() });
const samples = () => testEnv.db.any(sql.type(SampleRow)`SELECT source_id, value, start_at FROM health_samples ORDER BY source_id`);
const lastSynced = () =>
  testEnv.db.oneFirst(sql.type(z.object({ last_synced_at: z.string().nullable() }))`SELECT last_synced_at FROM connections WHERE id = ${phone.id}::uuid`);

async function push(body: unknown) {
  const response = await fetch(`${consoleService.address}/api/ingest/${phone.id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${phone.secret}` },
    // JSON.stringify writes a lone surrogate as the escape \ud800, as a hostile client would send it.
    body: JSON.stringify(body),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: response.status, json: (await response.json()) as any };
}

const sample = (sourceId: string, startAt: unknown, extra: Record<string, unknown> = {}) => ({
  object: 'health.sample',
  source_id: sourceId,
  metric: 'body_mass',
  value: 70,
  unit: 'kg',
  start_at: startAt,
  ...extra,
});

beforeAll(async () => {
  consoleService = await startTestConsole(testEnv, audit.recorder);
  const created = await api(consoleService.address, 'POST', '/api/connections', { provider: 'health-auto-export' });
  phone = { id: created.json.connection.id, secret: created.json.ingestSecret };
});
afterAll(async () => consoleService?.close());

beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`DELETE FROM health_samples`);
  expect((await push({ records: [sample('kept', '2026-03-01T07:00:00Z', { value: 71 })] })).status).toBe(200);
});

const BAD_RECORDS: Array<[string, Record<string, unknown>, string, string]> = [
  ['year 0', sample('y0', '0000-01-01T00:00:00Z'), 'start_at', PG_VALUE_RULES.instant],
  ['1e15 ms', sample('big', 1e15), 'start_at', PG_VALUE_RULES.instant],
  ['year 10000', sample('y10k', '10000-01-01'), 'start_at', PG_VALUE_RULES.instant],
  ['a lone surrogate', sample('surrogate', '2026-03-02T07:00:00Z', { metric: '\ud800' }), 'metric', PG_VALUE_RULES.text],
  ['a NUL in source_id', sample('n\u0000ul', '2026-03-02T07:00:00Z'), 'source_id', PG_VALUE_RULES.text],
];

describe('a canonical push with bad records', () => {
  it('stores the good ones and answers 200 listing each bad one by index and field', async () => {
    const records = [sample('good-1', '2026-03-02T07:00:00Z'), ...BAD_RECORDS.map(([, record]) => record), sample('good-2', '2026-03-03T07:00:00+02:00')];
    const before = audit.events.length;
    const answer = await push({ records });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      format: 'records',
      accepted: { 'health.sample': 2 },
      skipped: BAD_RECORDS.length,
      rejected: BAD_RECORDS.map(([, , field, error], index) => ({ record: `records[${index + 1}]`, field, error })),
    });
    expect((await samples()).map((row) => row.source_id)).toEqual(['good-1', 'good-2', 'kept']);
    expect(audit.events.slice(before)).toEqual([
      expect.objectContaining({
        tool: 'ingest',
        decision: 'allow',
        outcome: 'ok',
        resultCount: 2,
        args: expect.objectContaining({ status: 200, accepted: { 'health.sample': 2 }, skipped: BAD_RECORDS.length }),
      }),
    ]);
  });

  it.each(BAD_RECORDS)('answers a push holding only %s with 400 naming it, and loses nothing stored', async (_what, record, field, error) => {
    const synced = await lastSynced();
    const before = audit.events.length;
    const answer = await push({ records: [record] });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({
      error: `no record of the push could be stored: records[0]: '${field}' ${error}`,
      code: 'validation_failed',
      format: 'records',
      accepted: {},
      skipped: 1,
      rejected: [{ record: 'records[0]', field, error }],
    });
    expect(await samples()).toEqual([{ source_id: 'kept', value: 71, start_at: expect.any(String) }]);
    expect(await lastSynced()).toBe(synced);
    expect(audit.events.slice(before)).toEqual([
      expect.objectContaining({ tool: 'ingest', decision: 'allow', outcome: 'error', resultCount: 0, args: expect.objectContaining({ status: 400, skipped: 1 }) }),
    ]);
  });
});

describe("a push of the health app's export with bad points", () => {
  const point = (date: string, qty: number, source = 'iPhone') => ({ qty, date, source });

  it('stores the good points and lists the bad ones by place and field', async () => {
    const answer = await push({
      data: {
        metrics: [
          {
            name: 'step_count',
            units: 'count',
            data: [point('2026-03-02 08:00:00 +0100', 10), point('0000-01-01 00:00:00 +0000', 20), point('2026-03-02 09:00:00 +0100', 30, 'i\ud800')],
          },
        ],
        workouts: [{ id: 'w1', name: 'Run', start: '0000-01-01 00:00:00 +0000', end: '2026-03-02 09:00:00 +0100' }],
      },
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      format: 'health-auto-export',
      accepted: { 'health.sample': 1, 'health.workout': 0, 'health.sleep_session': 0 },
      skipped: 3,
      rejected: [
        { record: 'data.metrics[0].data[1]', field: 'start_at', error: PG_VALUE_RULES.instant },
        { record: 'data.metrics[0].data[2]', field: 'device', error: PG_VALUE_RULES.text },
        { record: 'data.workouts[0]', field: 'start_at', error: PG_VALUE_RULES.instant },
      ],
    });
    expect((await samples()).map((row) => row.value)).toEqual([71, 10]);
  });

  it('answers an export with no storable point with 400 listing them, and loses nothing stored', async () => {
    const answer = await push({ data: { metrics: [{ name: 'step_count', units: 'count', data: [point('0000-01-01 00:00:00 +0000', 20), { qty: 1, date: 'soon' }] }] } });
    expect(answer.status).toBe(400);
    expect(answer.json.rejected).toEqual([
      { record: 'data.metrics[0].data[1]', field: 'date', error: 'must be a time written yyyy-MM-dd HH:mm:ss Z, with its offset' },
      { record: 'data.metrics[0].data[0]', field: 'start_at', error: PG_VALUE_RULES.instant },
    ]);
    expect(answer.json.error).toContain("no record of the push could be stored: data.metrics[0].data[1]: 'date'");
    expect(await samples()).toEqual([expect.objectContaining({ source_id: 'kept', value: 71 })]);
  });
});
