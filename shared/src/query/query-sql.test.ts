import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogueObject, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { upsertRecords } from '../cache/index.ts';
import { createAccountMatchService } from '../finance/index.ts';
import { type ObjectDef } from '../sectors/index.ts';
import { createQueryEngine, type QueryEngine, type QueryContext } from './query-engine.ts';
import { QueryInputSchema } from './query-input.ts';
import { planQuery } from './query-plan.ts';
import { filterSql, pageSql } from './query-sql.ts';

// The statements a query runs, judged by the rows they return at the edges: a range's first and last instant,
// a span that touches a range without entering it, a backslash in a text search, and each metric's value.
// Every expectation is written out by hand from the rule the field or operator documents.
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const object = catalogueObject;
const sample = object('health.sample');
const event = object('calendar.event');
const transaction = object('finance.transaction');
const sleep = object('health.sleep_session');
/** Wednesday 2026-03-11, 23:30 UTC: Thursday the 12th in Berlin, still Wednesday the 11th in New York. */
const NOW = new Date('2026-03-11T23:30:00Z');
const local = (zone: string): QueryContext => ({ now: () => NOW, timeZone: async () => zone });
const connections: Record<'first' | 'second' | 'third', string> = { first: '', second: '', third: '' };
const cards: Record<'early' | 'late', string> = { early: '', late: '' };

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  connections.first = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'whoop' });
  connections.second = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'health-auto-export' });
  connections.third = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'oura' });
  const point = (source_id: string, at: string) => ({ source_id, metric: 'edge', value: 1, unit: 'count', start_at: at, end_at: at });
  const span = (source_id: string, metric: string, start_at: string, end_at: string | null) => ({ source_id, metric, value: 1, unit: 'count', start_at, end_at });
  await upsertRecords(testEnv.db, {
    object: 'health.sample',
    connectionId: connections.first,
    source: 'whoop',
    records: [
      // Berlin's 11 March runs from 10 March 23:00Z to 11 March 23:00Z.
      point('e-before', '2026-03-10T22:59:59.999Z'),
      point('e-first', '2026-03-10T23:00:00.000Z'),
      point('e-last', '2026-03-11T22:59:59.999Z'),
      point('e-after', '2026-03-11T23:00:00.000Z'),
      // Spans against the pair [10:00, 12:00] of 5 March (both ends included).
      span('ends-at-low', 'span', '2026-03-05T09:00:00Z', '2026-03-05T10:00:00Z'),
      span('across-low', 'span', '2026-03-05T09:00:00Z', '2026-03-05T10:30:00Z'),
      span('point-at-low', 'span', '2026-03-05T10:00:00Z', '2026-03-05T10:00:00Z'),
      span('starts-at-high', 'span', '2026-03-05T12:00:00Z', '2026-03-05T13:00:00Z'),
      span('after-high', 'span', '2026-03-05T12:00:00.001Z', '2026-03-05T13:00:00Z'),
      span('open-before', 'span', '2026-03-05T09:00:00Z', null),
      span('open-inside', 'span', '2026-03-05T11:00:00Z', null),
      // Reported by several sources: heart rate 08:00–09:00 on 1 March here.
      span('hr-first', 'heart_rate', '2026-03-01T08:00:00Z', '2026-03-01T09:00:00Z'),
    ],
  });
  await upsertRecords(testEnv.db, {
    object: 'health.sample',
    connectionId: connections.second,
    source: 'health-auto-export',
    records: [span('hr-second', 'heart_rate', '2026-03-01T08:30:00Z', '2026-03-01T09:30:00Z'), span('hr-second-short', 'heart_rate', '2026-03-01T08:45:00Z', '2026-03-01T08:50:00Z')],
  });
  await upsertRecords(testEnv.db, {
    object: 'health.sample',
    connectionId: connections.third,
    source: 'oura',
    records: [
      // Starts as hr-first ends: touching is not overlapping.
      span('hr-third', 'heart_rate', '2026-03-01T09:00:00Z', '2026-03-01T10:00:00Z'),
      // The same hour as hr-first, but another metric.
      span('steps-third', 'step_count', '2026-03-01T08:00:00Z', '2026-03-01T09:00:00Z'),
    ],
  });
  const night = (source_id: string, start_at: string, end_at: string) => ({ source_id, start_at, end_at, asleep_s: 25_000 });
  await upsertRecords(testEnv.db, { object: 'health.sleep_session', connectionId: connections.first, source: 'whoop', records: [night('n-first', '2026-03-01T22:00:00Z', '2026-03-02T06:00:00Z')] });
  await upsertRecords(testEnv.db, { object: 'health.sleep_session', connectionId: connections.second, source: 'health-auto-export', records: [night('n-second', '2026-03-01T23:00:00Z', '2026-03-02T07:00:00Z')] });

  const calendar = await insertTestConnection(testEnv.db, { sector: 'calendar', provider: 'google' });
  const allDay = (source_id: string, start_date: string, end_date: string | null) => ({ source_id, title: source_id, all_day: true, start_date, end_date });
  await upsertRecords(testEnv.db, {
    object: 'calendar.event',
    connectionId: calendar,
    source: 'google',
    records: [
      // Against the days 1 and 2 April (end_date is the day after the last day).
      allDay('ends-on-first-day', '2026-03-30', '2026-04-01'),
      allDay('across-first-day', '2026-03-31', '2026-04-02'),
      allDay('on-last-day', '2026-04-02', '2026-04-03'),
      allDay('day-after', '2026-04-03', '2026-04-04'),
      allDay('open-inside', '2026-04-01', null),
    ],
  });

  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  const posted = (source_id: string, posted_on: string | null, amount: string, description: string, merchant_name: string | null) => ({
    source_id,
    posted_on,
    amount,
    description,
    merchant_name,
    currency: 'USD',
    pending: posted_on === null,
  });
  await upsertRecords(testEnv.db, {
    object: 'finance.transaction',
    connectionId: bank,
    source: 'plaid',
    records: [
      posted('d-09', '2026-03-09', '-1.00', 'C:temp', 'Shop'),
      posted('d-10', '2026-03-10', '-2.00', 'C:\\temp', null),
      posted('d-11', '2026-03-11', '-2.00', '\\\\server', 'Shop'),
      posted('d-none', null, '-4.00', 'server', null),
    ],
  });

  // Design 8.3: a card both connections report, the later one without its last 4 digits, is an open question,
  // so its transactions are served from both and WHOLE FOODS (one day apart) is a pair of possible twins.
  const bridge = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'simplefin' });
  const card = async (connectionId: string, source: string, sourceId: string, mask: string | null, rows: Array<Record<string, unknown>>) => {
    await upsertRecords(testEnv.db, { object: 'finance.account', connectionId, source, records: [{ source_id: sourceId, institution_domain: 'americanexpress.com', name: 'Gold Card', mask, type: 'credit', subtype: 'credit card', currency: 'USD' }] });
    const id = await testEnv.db.oneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM finance_accounts WHERE connection_id = ${connectionId}::uuid AND source_id = ${sourceId}`);
    await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId, source, records: rows.map((row) => ({ pending: false, currency: 'USD', ...row, account_id: id })) });
    return id;
  };
  cards.early = await card(bank, 'plaid', 'e-card', '1007', [
    { source_id: 'e-c1', amount: '-60.00', posted_on: '2026-11-03', description: 'WHOLE FOODS', merchant_name: 'Whole Foods' },
    { source_id: 'e-c2', amount: '-9.99', posted_on: '2026-11-04', description: 'NETFLIX', merchant_name: 'Netflix' },
  ]);
  cards.late = await card(bridge, 'simplefin', 'l-card', null, [
    { source_id: 'l-c1', amount: '-60.00', posted_on: '2026-11-04', description: 'WHOLE FOODS', merchant_name: null },
    { source_id: 'l-c3', amount: '-15.00', posted_on: '2026-11-05', description: 'UBER', merchant_name: 'Uber' },
  ]);
  await createAccountMatchService({ db: testEnv.db }).reconcile();
});

const sourceIds = async (on: ObjectDef, where: unknown[], context: QueryContext = local('UTC')) =>
  (await engine.query(on, { object: on.name, where, select: ['source_id'], limit: 100 }, context)).rows.map((row) => String(row.source_id)).sort();

describe('a relative date on an instant field: local days from midnight to midnight in the zone', () => {
  const edges = (op: string) => sourceIds(sample, [{ field: 'metric', op: 'eq', value: 'edge' }, { field: 'start_at', op, value: 'yesterday' }], local('Europe/Berlin'));

  it.each([
    ['eq: the whole day and nothing else', 'eq', ['e-first', 'e-last']],
    ['gte: from the day on', 'gte', ['e-after', 'e-first', 'e-last']],
    ['gt: after the day', 'gt', ['e-after']],
    ['lt: before the day', 'lt', ['e-before']],
    ['lte: up to the end of the day', 'lte', ['e-before', 'e-first', 'e-last']],
  ])('%s', async (_label, op, expected) => {
    expect(await edges(op)).toEqual(expected);
  });
});

describe('a relative date on a date field: local days, compared as dates', () => {
  // In New York, NOW is still 11 March: yesterday is the 10th. The transaction without a date is in none.
  const days = (op: string) => sourceIds(transaction, [{ field: 'account_id', op: 'is_null', value: true }, { field: 'posted_on', op, value: 'yesterday' }], local('America/New_York'));

  it.each([
    ['eq', ['d-10']],
    ['gte', ['d-10', 'd-11']],
    ['gt', ['d-11']],
    ['lt', ['d-09']],
    ['lte', ['d-09', 'd-10']],
  ])('%s', async (op, expected) => {
    expect(await days(op)).toEqual(expected);
  });
});

describe('overlaps: a span [start, end) that shares a moment with the range', () => {
  it('with an explicit pair of instants, both ends included; a span with no end overlaps when it starts inside', async () => {
    const found = await sourceIds(sample, [{ field: 'metric', op: 'eq', value: 'span' }, { field: 'start_at', op: 'overlaps', value: ['2026-03-05T10:00:00Z', '2026-03-05T12:00:00Z'] }]);
    expect(found).toEqual(['across-low', 'open-inside', 'point-at-low', 'starts-at-high']);
  });

  it('with a relative date on instants: the local day, its next midnight excluded', async () => {
    const found = await sourceIds(sample, [{ field: 'metric', op: 'eq', value: 'edge' }, { field: 'start_at', op: 'overlaps', value: 'yesterday' }], local('Europe/Berlin'));
    expect(found).toEqual(['e-first', 'e-last']);
  });

  it('with a pair of dates on all-day events: both days included, an event ending (exclusive) on the first day excluded', async () => {
    const found = await sourceIds(event, [{ field: 'start_date', op: 'overlaps', value: ['2026-04-01', '2026-04-02'] }], local('America/New_York'));
    expect(found).toEqual(['across-first-day', 'on-last-day', 'open-inside']);
  });
});

describe('contains and starts_with read a backslash as itself', () => {
  it('contains', async () => {
    expect(await sourceIds(transaction, [{ field: 'description', op: 'contains', value: 'c:\\t' }])).toEqual(['d-10']);
  });

  it('starts_with', async () => {
    expect(await sourceIds(transaction, [{ field: 'description', op: 'starts_with', value: '\\\\' }])).toEqual(['d-11']);
    expect(await sourceIds(transaction, [{ field: 'description', op: 'starts_with', value: '\\s' }])).toEqual([]);
  });
});

describe('metrics', () => {
  it('gives count of a field (its values, not its rows), min, max, and the average of a decimal rounded to 4 places', async () => {
    const result = await engine.query(transaction, {
      object: 'finance.transaction',
      where: [{ field: 'account_id', op: 'is_null', value: true }, { field: 'posted_on', op: 'is_null', value: false }],
      aggregate: {
        metrics: [
          { fn: 'count' },
          { fn: 'count', field: 'merchant_name' },
          { fn: 'min', field: 'amount' },
          { fn: 'max', field: 'amount' },
          { fn: 'avg', field: 'amount' },
          { fn: 'min', field: 'posted_on' },
          { fn: 'max', field: 'posted_on' },
        ],
      },
    });
    // -1.00, -2.00, -2.00: the average is -5/3.
    expect(result.rows).toEqual([
      { count: 3, count_merchant_name: 2, min_amount: '-2.00', max_amount: '-1.00', avg_amount: '-1.6667', min_posted_on: '2026-03-09', max_posted_on: '2026-03-11' },
    ]);
  });
});

describe('in and not_in on fields that are not text', () => {
  it('compares dates and decimals as their own type', async () => {
    expect(await sourceIds(transaction, [{ field: 'posted_on', op: 'in', value: ['2026-03-09', '2026-03-11'] }])).toEqual(['d-09', 'd-11']);
    expect(await sourceIds(transaction, [{ field: 'account_id', op: 'is_null', value: true }, { field: 'amount', op: 'not_in', value: ['-2', '-4.0'] }])).toEqual(['d-09']);
  });
});

describe('a local day of a date field is that date, in any zone', () => {
  it('groups dates by day in New York without moving them', async () => {
    const result = await engine.query(
      transaction,
      { object: 'finance.transaction', where: [{ field: 'account_id', op: 'is_null', value: true }, { field: 'posted_on', op: 'is_null', value: false }], aggregate: { group_by: [{ field: 'posted_on', bucket: 'day' }], metrics: [{ fn: 'count' }] } },
      local('America/New_York'),
    );
    expect(result.rows).toEqual([
      { posted_on_day: '2026-03-09', count: 1 },
      { posted_on_day: '2026-03-10', count: 1 },
      { posted_on_day: '2026-03-11', count: 1 },
    ]);
  });
});

describe('possible twins in an aggregate (design 8.3)', () => {
  it('gives every count and sum, a count of a field too, without the later copy of each pair', async () => {
    const result = await engine.query(transaction, {
      object: 'finance.transaction',
      where: [{ field: 'account_id', op: 'in', value: [cards.early, cards.late] }],
      aggregate: { metrics: [{ fn: 'count' }, { fn: 'count', field: 'merchant_name' }, { fn: 'sum', field: 'amount' }] },
    });
    // Four rows, three with a merchant, -60 -9.99 -60 -15 = -144.99; the later copy l-c1 (-60.00, no merchant) left out.
    expect(result.rows).toEqual([
      {
        count: 4,
        count_merchant_name: 3,
        sum_amount: '-144.99',
        count_without_possible_twins: 3,
        count_merchant_name_without_possible_twins: 3,
        sum_amount_without_possible_twins: '-84.99',
      },
    ]);
  });
});

describe('the cursor of a page over fields that are never missing, in one direction', () => {
  it('bounds the index scan itself, so a page deep in the order does not read the rows before it', async () => {
    const plan = planQuery(sample, QueryInputSchema.parse({ object: 'health.sample', select: ['source_id'], order_by: [{ field: 'connection_id', direction: 'asc' }, { field: 'source_id', direction: 'asc' }], limit: 20 }));
    const page = pageSql(plan, [connections.second, 'hr-second', 'x']);
    type PlanNode = { 'Index Name'?: string; 'Index Cond'?: string; Plans?: PlanNode[] };
    const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];
    const [explained] = await testEnv.db.transaction(async (tx) => {
      await tx.query(sql.unsafe`SET LOCAL enable_sort = off`);
      return tx.any(sql.type(z.object({ 'QUERY PLAN': z.array(z.object({ Plan: z.custom<PlanNode>() })) }))`EXPLAIN (FORMAT JSON) ${page}`);
    });
    const scans = nodesOf(explained?.['QUERY PLAN'][0]?.Plan ?? {}).filter((node) => node['Index Name'] === 'health_samples_connection_id_source_id_key');
    expect(scans.map((node) => node['Index Cond'])).toEqual([expect.stringMatching(/^\(ROW\(connection_id, source_id\) >= ROW\(/)]);
  });
});

describe('pages in an order of two directions over fields that are never missing', () => {
  it('walks every row once, in the order of one page holding them all', async () => {
    const input = { object: 'health.sample', select: ['source_id'], order_by: [{ field: 'connection_id', direction: 'asc' }, { field: 'source_id', direction: 'desc' }] };
    const all = (await engine.query(sample, { ...input, limit: 100 })).rows.map((row) => row.source_id);
    const walked: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page <= all.length; page += 1) {
      const result = await engine.query(sample, { ...input, limit: 3, cursor });
      walked.push(...result.rows.map((row) => row.source_id));
      cursor = result.next_cursor;
      if (!cursor) break;
    }
    // 4 edge points, 7 spans and 5 heart rate and step rows.
    expect(all).toHaveLength(16);
    expect(walked).toEqual(all);
  });
});

describe('a filter plan', () => {
  it('refuses overlaps without the range the planner gives it', () => {
    const field = sample.fields.find((candidate) => candidate.name === 'start_at');
    if (!field) throw new Error('no start_at');
    expect(() => filterSql({ field, op: 'overlaps', value: 'today' })).toThrow('overlaps is planned with a range');
  });
});

describe('also_reported_by: the other connections with an overlapping row', () => {
  const reportedBy = async (on: ObjectDef, where: unknown[] = []) => {
    const { rows } = await engine.query(on, { object: on.name, where, select: ['source_id', 'also_reported_by'], limit: 100 });
    return Object.fromEntries(rows.map((row) => [row.source_id, row.also_reported_by]));
  };

  it('of samples: of the same metric only, each connection once, in order, and not a row that only touches', async () => {
    const byId = await reportedBy(sample, [{ field: 'start_at', op: 'overlaps', value: ['2026-03-01T00:00:00Z', '2026-03-01T23:59:59Z'] }]);
    const sorted = (...ids: string[]) => [...ids].sort();
    expect(byId).toEqual({
      'hr-first': [connections.second],
      'hr-second': sorted(connections.first, connections.third),
      'hr-second-short': [connections.first],
      'hr-third': [connections.second],
      'steps-third': [],
    });
  });

  it('of nights, which have no metric', async () => {
    expect(await reportedBy(sleep)).toEqual({ 'n-first': [connections.second], 'n-second': [connections.first] });
  });
});
