import { describe, expect, it } from 'vitest';
import { dayStart, haePayloadV1, haePayloadV2 } from '@pcg/testkit/doubles';
import { recordsFromHae } from './hae-format.ts';
import { parseHaeTime } from './hae-time.ts';
import { readIngestPayload } from './ingest-payload.ts';
import { locateJsonError } from './json-position.ts';
import { PG_VALUE_RULES } from '../validation/index.ts';

describe('Health Auto Export times', () => {
  it.each([
    ['2021-12-24 00:04:00 +0800', '2021-12-23T16:04:00.000Z'],
    ['2021-12-24 00:04:00 -0530', '2021-12-24T05:34:00.000Z'],
    ['2021-12-24T00:04:00+08:00', '2021-12-23T16:04:00.000Z'],
    ['2021-12-24 00:04:00 Z', '2021-12-24T00:04:00.000Z'],
  ])('reads %s', (text, iso) => expect(parseHaeTime(text)).toBe(iso));

  it.each(['2021-12-24 00:04:00', '24/12/2021 00:04', 'yesterday', 42])('refuses %s (no offset, or not a time)', (value) => {
    expect(parseHaeTime(value)).toBeUndefined();
  });
});

describe('the health app export', () => {
  const day = dayStart(1, Date.UTC(2026, 2, 10, 12));

  it('reads metrics, aggregated sleep and v2 workouts, converting kJ and km', () => {
    const out = recordsFromHae(haePayloadV2(day));
    expect(out.skipped).toBe(0);
    const metrics = out.samples.map((sample) => String(sample.metric));
    expect(metrics.filter((m) => m === 'step_count')).toHaveLength(6);
    expect(metrics.filter((m) => m.startsWith('heart_rate')).sort()).toEqual(['heart_rate', 'heart_rate', 'heart_rate', 'heart_rate_max', 'heart_rate_min']);
    expect(out.samples.find((s) => s.metric === 'active_energy')).toMatchObject({ value: 41.84, unit: 'kJ' });
    expect(out.samples.filter((s) => String(s.metric).startsWith('blood_pressure')).map((s) => [s.metric, s.value])).toEqual([
      ['blood_pressure_systolic', 121],
      ['blood_pressure_diastolic', 79],
    ]);
    expect(out.samples.find((s) => s.metric === 'step_count')).toMatchObject({ start_at: new Date(day + 8 * 3_600_000).toISOString(), device: 'iPhone' });
    expect(out.workouts).toEqual([
      expect.objectContaining({ source_id: '7C3AB2D1-4E5F-4A6B-8C9D-0E1F2A3B4C5D', sport: 'outdoor_run', duration_s: 2400, energy_kcal: 500, distance_m: 7500, avg_hr: 151, max_hr: 178 }),
    ]);
    expect(out.sleepSessions).toEqual([
      expect.objectContaining({ asleep_s: 7 * 3600, in_bed_s: 7.5 * 3600, light_s: 4 * 3600, deep_s: 1.25 * 3600, rem_s: 1.25 * 3600, awake_s: 900, start_at: new Date(day - 2 * 3_600_000).toISOString() }),
    ]);
    expect(out.sleepSessions[0]?.efficiency_pct).toBeCloseTo(93.33, 2);
  });

  it('reads v1 workouts without an id and stage segments, keeping one source per night', () => {
    const out = recordsFromHae(haePayloadV1(day));
    expect(out.workouts).toEqual([
      expect.objectContaining({ sport: 'walking', duration_s: 1800, energy_kcal: 150, avg_hr: 105, max_hr: 110 }),
    ]);
    expect(out.workouts[0]?.source_id).toBe(`Walking|${new Date(day + 12 * 3_600_000).toISOString()}`);
    expect(out.workouts[0]?.distance_m).toBeCloseTo(2414.016, 3);
    // The watch's staged session wins over the phone's overlapping in-bed-only one.
    expect(out.sleepSessions).toHaveLength(1);
    expect(out.sleepSessions[0]).toMatchObject({ asleep_s: 6.75 * 3600, awake_s: 900, rem_s: 1.75 * 3600, deep_s: 3600, light_s: 4 * 3600 });
    expect(String(out.sleepSessions[0]?.source_id)).toContain('Apple Watch');
  });

  it('gives a re-sent push the same source ids', () => {
    const ids = (payload: unknown) => {
      const out = recordsFromHae(payload);
      return [...out.samples, ...out.workouts, ...out.sleepSessions].map((record) => record.source_id);
    };
    expect(ids(haePayloadV2(day))).toEqual(ids(haePayloadV2(day)));
    expect(new Set(ids(haePayloadV2(day))).size).toBe(ids(haePayloadV2(day)).length);
  });

  it('names a sample by its metric and minute, and an aggregated night by its date, not by the devices their source lists (issue 31 item 12)', () => {
    const ids = (stepSource: string) => recordsFromHae(haePayloadV2(day, { stepSource })).samples.filter((s) => s.metric === 'step_count').map((s) => s.source_id);
    expect(ids('iPhone|Apple Watch')).toEqual(ids('iPhone'));
    expect(ids('iPhone')).toEqual([0, 1, 2, 3, 4, 5].map((i) => `step_count|${new Date(day + 8 * 3_600_000 + i * 60_000).toISOString()}`));
    const night = (sleepSource: string) => recordsFromHae(haePayloadV2(day, { sleepSource })).sleepSessions.map((s) => s.source_id);
    expect(night('Apple Watch|iPhone')).toEqual(night('Apple Watch'));
    expect(night('Apple Watch')).toEqual([`sleep|${new Date(day).toISOString().slice(0, 10)}`]);
  });

  it('skips, counts and lists the points it cannot read, with their place and field', () => {
    const out = recordsFromHae({ data: { metrics: [{ name: 'step_count', units: 'count', data: [{ qty: 1, date: 'soon' }, { date: '2026-01-01 10:00:00 +0000' }, { qty: 3, date: '2026-01-01 10:00:00 +0000' }] }], workouts: [{ name: 'Yoga' }] } });
    expect(out.samples).toHaveLength(1);
    expect(out.skipped).toBe(3);
    expect(out.rejected.map(({ record, field }) => [record, field])).toEqual([
      ['data.metrics[0].data[0]', 'date'],
      ['data.metrics[0].data[1]', 'qty'],
      ['data.workouts[0]', 'start'],
    ]);
  });

  it('lists a point read but not storable (year 0, a NUL, a lone surrogate) and keeps the rest', () => {
    const point = (date: string, source = 'iPhone') => ({ qty: 1, date, source });
    const batch = readIngestPayload(
      {
        data: {
          metrics: [{ name: 'step_count', units: 'count', data: [point('0000-01-01 00:00:00 +0000'), point('2026-01-01 10:00:00 +0000'), point('2026-01-01 11:00:00 +0000', 'i\u0000Phone'), point('2026-01-01 12:00:00 +0000', '\ud800')] }],
          workouts: [{ id: 'w\u0000', name: 'Run', start: '2026-01-01 07:00:00 +0000' }],
        },
      },
      'health',
    );
    expect(batch.byObject.get('health.sample')).toEqual([expect.objectContaining({ start_at: '2026-01-01T10:00:00.000Z' })]);
    expect(batch.rejected).toEqual([
      { record: 'data.metrics[0].data[0]', field: 'start_at', error: PG_VALUE_RULES.instant },
      { record: 'data.metrics[0].data[2]', field: 'device', error: PG_VALUE_RULES.text },
      { record: 'data.metrics[0].data[3]', field: 'device', error: PG_VALUE_RULES.text },
      { record: 'data.workouts[0]', field: 'source_id', error: PG_VALUE_RULES.text },
    ]);
    expect(batch.skipped).toBe(4);
  });
});

describe('the canonical {records:[…]} form', () => {
  it('infers the object in a one-object sector and requires it in health', () => {
    const home = readIngestPayload({ records: [{ source_id: 'light.x', entity_id: 'light.x', domain: 'light', state: 'on', attributes: {} }] }, 'home');
    expect([...home.byObject.keys()]).toEqual(['home.entity']);
    expect(readIngestPayload({ records: [{ source_id: 'a', metric: 'x' }] }, 'health').rejected).toEqual([
      { record: 'records[0]', field: 'object', error: 'name its object, one of health.sample, health.workout, health.sleep_session' },
    ]);
  });

  it("refuses a record of another sector: the connection decides, never the payload", () => {
    const batch = readIngestPayload({ records: [{ object: 'finance.transaction', source_id: 't', amount: '1' }] }, 'health');
    expect(batch.rejected).toEqual([{ record: 'records[0]', field: 'object', error: "object 'finance.transaction' is not in this connection's sector 'health'" }]);
    expect([...batch.byObject.values()].flat()).toEqual([]);
  });

  it('names the record and field that is wrong, and ignores unknown fields', () => {
    const batch = readIngestPayload(
      { records: [{ object: 'health.sample', source_id: 'a', metric: 'x', value: 'many' }, { object: 'health.sample', source_id: 'b', metric: 'x', value: 1, colour: 'red' }] },
      'health',
    );
    expect(batch.rejected).toEqual([{ record: 'records[0]', field: 'value', error: expect.any(String) }]);
    expect(batch.skipped).toBe(1);
    expect(batch.byObject.get('health.sample')).toEqual([expect.objectContaining({ source_id: 'b' })]);
  });

  it('refuses the health export on another sector, and an unrecognised body', () => {
    expect(() => readIngestPayload(haePayloadV2(), 'home')).toThrow("only be pushed to a health connection; this one is 'home'");
    expect(() => readIngestPayload({ hello: 'world' }, 'health')).toThrow('unrecognised payload');
    expect(() => readIngestPayload([1, 2], 'health')).toThrow('unrecognised payload');
  });
});

describe('locating a JSON syntax error', () => {
  it.each([
    ['{"a":}', 5, 'unexpected character'],
    ['{"a":1', 6, 'unexpected end of input'],
    ['{"a" 1}', 5, "expected ':'"],
    ['{"a":tru}', 8, "expected 'true'"],
    ['[1,2,]', 5, 'unexpected character'],
    ['{"a":1}x', 7, 'unexpected text after'],
    ['{\n  "a": [1,\n  2 3]\n}', 17, "expected ',' or ']'"],
    ['{"a":"\u0001"}', 6, 'control character'],
  ])('finds the problem in %j at %i', (text, position, reason) => {
    const problem = locateJsonError(text);
    expect(problem.position).toBe(position);
    expect(problem.reason).toContain(reason);
    expect(() => JSON.parse(text)).toThrow();
  });

  it('gives line and column', () => {
    expect(locateJsonError('{\n  "a": [1,\n  2 3]\n}')).toMatchObject({ line: 3, column: 5 });
  });
});
