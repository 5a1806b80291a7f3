import { beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '../cache/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';

// Issue 20: relative dates in where and day/week/month buckets, in the person's time zone; overlaps for
// spans that cross days.
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const sample = findObject('health.sample') as ObjectDef;
const event = findObject('calendar.event') as ObjectDef;
const transaction = findObject('finance.transaction') as ObjectDef;
/** Wednesday 2026-03-11, 23:30 in UTC: already Thursday the 12th in Berlin. */
const NOW = new Date('2026-03-11T23:30:00Z');
const local = (zone: string) => ({ now: () => NOW, timeZone: async () => zone });

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const health = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'health-auto-export' });
  // One resting heart rate a day at 23:30 UTC (00:30 next day in Berlin), for 21 days up to NOW.
  await upsertRecords(testEnv.db, {
    object: 'health.sample',
    connectionId: health,
    source: 'health-auto-export',
    records: Array.from({ length: 21 }, (_, i) => {
      const at = new Date(NOW.getTime() - i * 86_400_000).toISOString();
      return { source_id: `rhr${i}`, metric: 'resting_heart_rate', value: 50 + i, unit: 'count/min', start_at: at, end_at: at };
    }),
  });
  const calendar = await insertTestConnection(testEnv.db, { sector: 'calendar', provider: 'google' });
  await upsertRecords(testEnv.db, {
    object: 'calendar.event',
    connectionId: calendar,
    source: 'google',
    records: [
      { source_id: 'trip', title: 'Trip', all_day: true, start_date: '2026-03-10', end_date: '2026-03-16' },
      { source_id: 'fair', title: 'Fair', all_day: true, start_date: '2026-03-13', end_date: '2026-03-14' },
      { source_id: 'past', title: 'Past', all_day: true, start_date: '2026-03-05', end_date: '2026-03-13' },
      { source_id: 'night', title: 'Night shift', all_day: false, start_at: '2026-03-12T20:00:00Z', end_at: '2026-03-13T06:00:00Z' },
      { source_id: 'lunch', title: 'Lunch', all_day: false, start_at: '2026-03-13T11:00:00Z', end_at: '2026-03-13T12:00:00Z' },
      { source_id: 'late', title: 'Late call', all_day: false, start_at: '2026-03-13T23:30:00Z', end_at: '2026-03-14T00:00:00Z' },
    ],
  });
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, {
    object: 'finance.transaction',
    connectionId: bank,
    source: 'plaid',
    records: [
      { source_id: 'feb', posted_on: '2026-02-27', amount: '-20.00', provider_category: 'dining', pending: false },
      { source_id: 'feb2', posted_on: '2026-02-01', amount: '-5.00', provider_category: 'dining', pending: false },
      { source_id: 'mar', posted_on: '2026-03-01', amount: '-7.00', provider_category: 'dining', pending: false },
      { source_id: 'jan', posted_on: '2026-01-31', amount: '-9.00', provider_category: 'dining', pending: false },
    ],
  });
});

describe('relative dates', () => {
  it('resolves last_month on a local date field and echoes the range it used', async () => {
    const result = await engine.query(
      transaction,
      { object: 'finance.transaction', where: [{ field: 'posted_on', op: 'eq', value: 'last_month' }], aggregate: { metrics: [{ fn: 'sum', field: 'amount' }] } },
      local('Europe/Berlin'),
    );
    expect(result.rows).toEqual([{ sum_amount: '-25.00' }]);
    expect(result.resolved_dates).toEqual([{ where: 'where.0', field: 'posted_on', relative: 'last_month', from: '2026-02-01', to: '2026-02-28', time_zone: 'Europe/Berlin' }]);
  });

  it('resolves today on an instant field to the local day in the person\'s zone', async () => {
    const berlin = await engine.query(sample, { object: 'health.sample', where: [{ field: 'start_at', op: 'eq', value: 'today' }], select: ['value'] }, local('Europe/Berlin'));
    expect(berlin.rows.map((row) => row.value)).toEqual([50]);
    expect(berlin.resolved_dates?.[0]).toMatchObject({ from: '2026-03-12', to: '2026-03-12' });
    const newYork = await engine.query(sample, { object: 'health.sample', where: [{ field: 'start_at', op: 'eq', value: 'today' }], select: ['value'] }, local('America/New_York'));
    expect(newYork.rows.map((row) => row.value)).toEqual([50]);
    expect(newYork.resolved_dates?.[0]).toMatchObject({ from: '2026-03-11', to: '2026-03-11' });
  });

  it('takes gte with last_N_days (today included) and lt with a relative date', async () => {
    const recent = await engine.query(sample, { object: 'health.sample', where: [{ field: 'start_at', op: 'gte', value: 'last_7_days' }], select: ['value'] }, local('Europe/Berlin'));
    expect(recent.row_count).toBe(7);
    const older = await engine.query(sample, { object: 'health.sample', where: [{ field: 'start_at', op: 'lt', value: 'last_7_days' }], select: ['value'] }, local('Europe/Berlin'));
    expect(older.row_count).toBe(14);
  });

  it('refuses a relative date with an op that cannot take it, and an unknown one, naming the fix', async () => {
    await expect(engine.query(sample, { object: 'health.sample', where: [{ field: 'start_at', op: 'in', value: ['today'] }] }, local('UTC'))).rejects.toThrow('or, with eq, gte, gt, lt, lte, overlaps, a relative date');
    await expect(engine.query(sample, { object: 'health.sample', where: [{ field: 'start_at', op: 'eq', value: 'last_fortnight' }] }, local('UTC'))).rejects.toThrow('where.0.value: start_at is timestamp; expected an ISO 8601 instant');
  });
});

describe('buckets in the person\'s zone', () => {
  it('groups instants by local week (Monday first) and averages per week', async () => {
    const result = await engine.query(
      sample,
      {
        object: 'health.sample',
        where: [{ field: 'metric', op: 'eq', value: 'resting_heart_rate' }],
        aggregate: { group_by: [{ field: 'start_at', bucket: 'week' }], metrics: [{ fn: 'avg', field: 'value' }, { fn: 'count' }] },
        order_by: [{ field: 'start_at_week', direction: 'desc' }],
      },
      local('Europe/Berlin'),
    );
    // In Berlin the samples fall on 20 Feb … 12 Mar (00:30 local); weeks start on Mondays 16 Feb, 23 Feb, 2 Mar, 9 Mar.
    expect(result.rows).toEqual([
      { start_at_week: '2026-03-09', avg_value: 51.5, count: 4 },
      { start_at_week: '2026-03-02', avg_value: 57, count: 7 },
      { start_at_week: '2026-02-23', avg_value: 64, count: 7 },
      { start_at_week: '2026-02-16', avg_value: 69, count: 3 },
    ]);
  });

  it('puts the same instants in other days in UTC', async () => {
    const days = async (zone: string) =>
      (await engine.query(sample, { object: 'health.sample', where: [{ field: 'value', op: 'eq', value: 50 }], aggregate: { group_by: [{ field: 'start_at', bucket: 'day' }], metrics: [{ fn: 'count' }] } }, local(zone))).rows;
    expect(await days('UTC')).toEqual([{ start_at_day: '2026-03-11', count: 1 }]);
    expect(await days('Europe/Berlin')).toEqual([{ start_at_day: '2026-03-12', count: 1 }]);
  });

  it('groups local dates by month', async () => {
    const result = await engine.query(transaction, { object: 'finance.transaction', aggregate: { group_by: [{ field: 'posted_on', bucket: 'month' }], metrics: [{ fn: 'count' }] } }, local('UTC'));
    expect(result.rows).toEqual([
      { posted_on_month: '2026-01-01', count: 1 },
      { posted_on_month: '2026-02-01', count: 2 },
      { posted_on_month: '2026-03-01', count: 1 },
    ]);
  });
});

describe('overlaps for spans that cross days', () => {
  const titles = async (where: unknown[], zone = 'Europe/Berlin') =>
    (await engine.query(event, { object: 'calendar.event', where, select: ['title'], order_by: [{ field: 'title', direction: 'asc' }] }, local(zone))).rows.map((row) => row.title);

  it('finds every all-day event covering tomorrow, multi-day ones included, and not one that ended', async () => {
    // Tomorrow in Berlin is Friday 13 March; 'past' ends (exclusive) on the 13th.
    expect(await titles([{ field: 'start_date', op: 'overlaps', value: 'tomorrow' }])).toEqual(['Fair', 'Trip']);
  });

  it('finds timed events overlapping the local day, one that started the evening before included', async () => {
    // Berlin's 13 March runs from 12 March 23:00Z to 13 March 23:00Z: the late call (23:30Z) is the 14th there.
    expect(await titles([{ field: 'start_at', op: 'overlaps', value: 'tomorrow' }])).toEqual(['Lunch', 'Night shift']);
    // New York is still on the 11th: its tomorrow is the 12th, 04:00Z to 04:00Z.
    expect(await titles([{ field: 'start_at', op: 'overlaps', value: 'tomorrow' }], 'America/New_York')).toEqual(['Night shift']);
  });

  it('takes an explicit pair, and refuses a field that starts no span, naming the spans', async () => {
    expect(await titles([{ field: 'start_at', op: 'overlaps', value: ['2026-03-13T05:00:00Z', '2026-03-13T05:30:00Z'] }])).toEqual(['Night shift']);
    expect(await titles([{ field: 'start_date', op: 'overlaps', value: ['2026-03-05', '2026-03-05'] }])).toEqual(['Past']);
    await expect(engine.query(event, { object: 'calendar.event', where: [{ field: 'end_at', op: 'overlaps', value: 'today' }] }, local('UTC'))).rejects.toThrow(
      'where.0: overlaps applies to the start field of a span; spans of calendar.event: start_at (to end_at), start_date (to end_date)',
    );
  });
});
