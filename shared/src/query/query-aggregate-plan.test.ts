import { describe, expect, it } from 'vitest';
import { thrownMessage } from '@pcg/testkit/testing';
import { findField, findObject, type FieldDef, type ObjectDef } from '../sectors/index.ts';
import { planAggregate } from './query-aggregate-plan.ts';
import { QueryError } from './query-errors.ts';
import { QueryInputSchema } from './query-input.ts';

// The plan of an aggregate, without a database: its groups and metrics, each an output column named as the
// rows name it, and the order of the groups (the order asked for, then every group ascending).
const tx = findObject('finance.transaction') as ObjectDef;
const mail = findObject('mail.message') as ObjectDef;
const sample = findObject('health.sample') as ObjectDef;
const event = findObject('calendar.event') as ObjectDef;
const workout = findObject('health.workout') as ObjectDef;

function aggregate(object: ObjectDef, input: Record<string, unknown>, zone = 'Europe/Berlin') {
  const parsed = QueryInputSchema.parse({ object: object.name, ...input });
  return planAggregate(object, parsed.aggregate as NonNullable<typeof parsed.aggregate>, parsed.order_by, zone);
}

/** The QueryError message `attempt` throws. */
const refusal = (attempt: () => unknown): string => thrownMessage(attempt, QueryError);

/** What every output column is: sortable and nothing else, without a description. */
const OUTPUT = { description: '', filterable: false, sortable: true } as const;
/** An output column, named and read by its alias. */
const output = (alias: string, type: FieldDef['type'], nullable: boolean): FieldDef => ({ ...OUTPUT, name: alias, column: alias, type, nullable });

describe('groups', () => {
  it('a field is its own output, with its type and whether it can be missing', () => {
    const plan = aggregate(tx, { aggregate: { group_by: ['category', 'pending'], metrics: [{ fn: 'count' }] } });
    expect(plan.groupBy).toEqual([
      { field: findField(tx, 'category'), alias: 'category', output: output('category', 'string', true) },
      { field: findField(tx, 'pending'), alias: 'pending', output: output('pending', 'boolean', false) },
    ]);
  });

  it('a bucket of a date or an instant is a date named <field>_<bucket>', () => {
    const plan = aggregate(tx, { aggregate: { group_by: [{ field: 'posted_on', bucket: 'week' }, { field: 'synced_at', bucket: 'month' }], metrics: [{ fn: 'count' }] } });
    expect(plan.groupBy).toEqual([
      { field: findField(tx, 'posted_on'), bucket: 'week', alias: 'posted_on_week', output: output('posted_on_week', 'date', true) },
      { field: findField(tx, 'synced_at'), bucket: 'month', alias: 'synced_at_month', output: output('synced_at_month', 'date', false) },
    ]);
  });

  it('refuses a field that cannot be sorted, naming those that can', () => {
    expect(refusal(() => aggregate(workout, { aggregate: { group_by: ['sport', 'duplicate_of'], metrics: [{ fn: 'count' }] } }))).toMatch(
      /^aggregate\.group_by\.1: field 'duplicate_of' cannot be used here; groupable fields: id, connection_id, /,
    );
  });

  it('refuses a bucket of a field that is no date or instant', () => {
    expect(refusal(() => aggregate(mail, { aggregate: { group_by: [{ field: 'subject', bucket: 'day' }], metrics: [{ fn: 'count' }] } }))).toBe(
      "aggregate.group_by.0.field: field 'subject' cannot be used here; date or timestamp fields: synced_at, received_at",
    );
  });
});

describe('metrics', () => {
  it('a bare count counts rows, never missing', () => {
    expect(aggregate(tx, { aggregate: { metrics: [{ fn: 'count' }] } }).metrics).toEqual([{ fn: 'count', alias: 'count', output: output('count', 'decimal', false) }]);
  });

  it.each(['sum', 'avg', 'min', 'max'])('%s needs a field', (fn) => {
    expect(refusal(() => aggregate(tx, { aggregate: { metrics: [{ fn: 'count' }, { fn }] } }))).toBe(`aggregate.metrics.1: ${fn} needs a field`);
  });

  it.each([
    // A count of a field counts its present values: a number, never missing.
    [tx, 'count', 'description', 'decimal', false],
    [tx, 'count', 'pending', 'decimal', false],
    // Sums of whole numbers and of decimals are exact; a sum of floating point numbers is one.
    [tx, 'sum', 'amount', 'decimal', true],
    [mail, 'sum', 'size_bytes', 'decimal', true],
    [sample, 'sum', 'value', 'number', true],
    // An average of decimals stays exact; of whole or floating point numbers it is a floating point number.
    [tx, 'avg', 'amount', 'decimal', true],
    [mail, 'avg', 'size_bytes', 'number', true],
    [sample, 'avg', 'value', 'number', true],
    // The least and the greatest are of the field's own type.
    [tx, 'min', 'posted_on', 'date', true],
    [tx, 'max', 'description', 'string', true],
    [tx, 'max', 'synced_at', 'timestamp', true],
    [mail, 'min', 'size_bytes', 'integer', true],
  ] as const)('%s: %s of %s is a %s named fn_field', (object, fn, name, type, nullable) => {
    const [metric] = aggregate(object, { aggregate: { metrics: [{ fn, field: name }] } }).metrics;
    expect(metric).toEqual({ fn, field: findField(object, name), alias: `${fn}_${name}`, output: output(`${fn}_${name}`, type, nullable) });
  });

  it.each([
    ['sum', tx, 'description', "aggregate.metrics.0: field 'description' cannot be used here; sum-able fields: amount"],
    ['avg', tx, 'posted_on', "aggregate.metrics.0: field 'posted_on' cannot be used here; avg-able fields: amount"],
    ['min', tx, 'pending', "aggregate.metrics.0: field 'pending' cannot be used here; min-able fields: id, source, source_id, synced_at, account_id, posted_on, authorized_on, amount, currency, description, merchant_name, provider_category, category, date, possible_twin_id"],
    ['max', mail, 'labels', "aggregate.metrics.0: field 'labels' cannot be used here; max-able fields: id, source, source_id, synced_at, account, folder, thread_id, from, subject, received_at, size_bytes, from_address, from_name"],
    ['count', event, 'attendees', "aggregate.metrics.0: field 'attendees' cannot be used here; count-able fields: id, connection_id, source, source_id, synced_at, event_uid, recurrence_id, calendar, title, start_at, end_at, all_day, start_date, end_date, timezone, location, status, organizer"],
  ])('%s refuses a field of a type it cannot take', (fn, object, name, message) => {
    expect(refusal(() => aggregate(object, { aggregate: { metrics: [{ fn, field: name }] } }))).toBe(message);
  });

  it('sums whole numbers and counts lists', () => {
    expect(aggregate(mail, { aggregate: { metrics: [{ fn: 'count', field: 'labels' }, { fn: 'sum', field: 'size_bytes' }] } }).metrics.map((metric) => metric.alias)).toEqual([
      'count_labels',
      'sum_size_bytes',
    ]);
  });
});

describe('outputs', () => {
  it.each([
    [{ group_by: ['category', 'category'], metrics: [{ fn: 'count' }] }, "aggregate: 'category' is asked for twice"],
    [{ metrics: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }, { fn: 'sum', field: 'amount' }] }, "aggregate: 'sum_amount' is asked for twice"],
    [{ group_by: [{ field: 'date', bucket: 'day' }, { field: 'date', bucket: 'day' }], metrics: [{ fn: 'count' }] }, "aggregate: 'date_day' is asked for twice"],
  ])('are each asked for once: %j', (input, message) => {
    expect(refusal(() => aggregate(tx, { aggregate: input }))).toBe(message);
  });

  it('may bucket one field twice, by different buckets', () => {
    const plan = aggregate(tx, { aggregate: { group_by: [{ field: 'date', bucket: 'day' }, { field: 'date', bucket: 'month' }], metrics: [{ fn: 'count' }] } });
    expect(plan.groupBy.map((group) => group.alias)).toEqual(['date_day', 'date_month']);
  });
});

describe('the order of the groups', () => {
  it('is every group ascending, in group_by order, without order_by', () => {
    const plan = aggregate(tx, { aggregate: { group_by: ['category', { field: 'date', bucket: 'month' }], metrics: [{ fn: 'count' }] } });
    expect(plan.order.map((entry) => [entry.field.name, entry.direction])).toEqual([
      ['category', 'asc'],
      ['date_month', 'asc'],
    ]);
    expect(plan.order[0]?.field).toBe(plan.groupBy[0]?.output);
  });

  it('is the outputs asked for, then the groups not named', () => {
    const plan = aggregate(tx, {
      order_by: [{ field: 'sum_amount', direction: 'desc' }, { field: 'date_month' }],
      aggregate: { group_by: ['category', { field: 'date', bucket: 'month' }], metrics: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }] },
    });
    expect(plan.order.map((entry) => [entry.field.name, entry.direction])).toEqual([
      ['sum_amount', 'desc'],
      ['date_month', 'asc'],
      ['category', 'asc'],
    ]);
    expect(plan.order[0]?.field).toBe(plan.metrics[1]?.output);
  });

  it('is only the metric asked for when there is no group (one row)', () => {
    const plan = aggregate(tx, { order_by: [{ field: 'count', direction: 'desc' }], aggregate: { metrics: [{ fn: 'count' }] } });
    expect(plan.order.map((entry) => [entry.field.name, entry.direction])).toEqual([['count', 'desc']]);
  });

  it('refuses a field that is not an output, naming the outputs', () => {
    expect(
      refusal(() => aggregate(tx, { order_by: [{ field: 'count' }, { field: 'amount' }], aggregate: { group_by: ['category'], metrics: [{ fn: 'count' }, { fn: 'max', field: 'date' }] } })),
    ).toBe("order_by.1: 'amount' is not an output of this aggregate; order by one of: category, count, max_date");
  });

  it('refuses an output named twice', () => {
    expect(refusal(() => aggregate(tx, { order_by: [{ field: 'count' }, { field: 'count', direction: 'desc' }], aggregate: { group_by: ['category'], metrics: [{ fn: 'count' }] } }))).toBe(
      'order_by: an output is named twice',
    );
  });

  it("keeps the person's time zone", () => {
    expect(aggregate(tx, { aggregate: { metrics: [{ fn: 'count' }] } }, 'America/New_York').zone).toBe('America/New_York');
  });
});
