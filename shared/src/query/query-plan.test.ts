import { describe, expect, it } from 'vitest';
import { thrownMessage } from '@pcg/testkit/testing';
import { findField, findObject, type FieldDef, type ObjectDef } from '../sectors/index.ts';
import { QueryError } from './query-errors.ts';
import { QueryInputSchema } from './query-input.ts';
import { coerceValue, planQuery, type PlanClock } from './query-plan.ts';

// The plan of a query, without a database: every filter value checked against its field's type and turned into
// the form bound as a parameter, relative dates and spans resolved, and the order and select lists completed.
const tx = findObject('finance.transaction') as ObjectDef;
const mail = findObject('mail.message') as ObjectDef;
const event = findObject('calendar.event') as ObjectDef;
const sample = findObject('health.sample') as ObjectDef;
const workout = findObject('health.workout') as ObjectDef;
// Wednesday 11 March 2026, 12:00 UTC (13:00 in Berlin).
const clock: PlanClock = { zone: 'Europe/Berlin', now: new Date('2026-03-11T12:00:00Z') };

const plan = (object: ObjectDef, input: Record<string, unknown> = {}) => planQuery(object, QueryInputSchema.parse({ object: object.name, ...input }), clock);
const field = (object: ObjectDef, name: string) => findField(object, name) as FieldDef;

/** The QueryError message `attempt` throws. */
const refusal = (attempt: () => unknown): string => thrownMessage(attempt, QueryError);

const RELATIVE_HINT =
  ' (or, with eq, gte, gt, lt, lte, overlaps, a relative date: today, yesterday, tomorrow, this_week, last_week, next_week, this_month, last_month, next_month, this_year, last_year, last_N_days, next_N_days)';

describe('a filter value is checked against its field type and bound in its own form', () => {
  it.each([
    ['a string', tx, 'description', 'Café', 'Café'],
    ['a string of exactly 1000 characters', tx, 'description', 'x'.repeat(1000), 'x'.repeat(1000)],
    ['one element of a list field', mail, 'labels', 'INBOX', 'INBOX'],
    ['a UUID, lowercased', tx, 'connection_id', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
    ['the largest whole number Postgres integer holds', mail, 'size_bytes', 2_147_483_647, 2_147_483_647],
    ['a negative whole number', mail, 'size_bytes', -2_147_483_647, -2_147_483_647],
    ['a fractional number', sample, 'value', 72.5, 72.5],
    ['a decimal as a number, as text', tx, 'amount', -12.5, '-12.5'],
    ['a decimal as text', tx, 'amount', '-12.50', '-12.50'],
    ['a decimal of 40 characters', tx, 'amount', '1'.repeat(40), '1'.repeat(40)],
    ['false', tx, 'pending', false, false],
    ['a date', tx, 'posted_on', '2026-03-01', '2026-03-01'],
    ['an instant with an offset', tx, 'synced_at', '2026-03-01T10:00:00+01:00', '2026-03-01T10:00:00+01:00'],
    ['an empty string', tx, 'description', '', ''],
  ])('takes %s', (_label, object, name, value, bound) => {
    expect(coerceValue(field(object, name), value, 'where.0.value')).toEqual(bound);
  });

  it.each([
    ['a number for a string', tx, 'description', 5, 'where.0.value: description is string; expected a string, got 5'],
    ['a number for a list element', mail, 'labels', 5, 'where.0.value: labels is string[]; expected a string, got 5'],
    ['a NUL in a string', tx, 'description', 'a\u0000b', 'where.0.value: description is string; expected a string without NUL characters or unpaired UTF-16 surrogates, got "a\\u0000b"'],
    ['a string of 1001 characters (its text cut to 80 in the message)', tx, 'description', 'x'.repeat(1001), `where.0.value: description is string; expected at most 1000 characters, got "${'x'.repeat(79)}`],
    ['a UUID with a character more', tx, 'connection_id', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11f', 'where.0.value: connection_id is uuid; expected a UUID, got "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11f"'],
    ['a number for a UUID', tx, 'connection_id', 7, 'where.0.value: connection_id is uuid; expected a UUID, got 7'],
    ['a whole number past Postgres integer', mail, 'size_bytes', 2_147_483_648, 'where.0.value: size_bytes is integer; expected a whole number, got 2147483648'],
    ['a negative whole number past Postgres integer', mail, 'size_bytes', -2_147_483_649, 'where.0.value: size_bytes is integer; expected a whole number, got -2147483649'],
    ['a fraction for a whole number', mail, 'size_bytes', 1.5, 'where.0.value: size_bytes is integer; expected a whole number, got 1.5'],
    ['text for a whole number', mail, 'size_bytes', '15', 'where.0.value: size_bytes is integer; expected a whole number, got "15"'],
    ['text for a number', sample, 'value', '72.5', 'where.0.value: value is number; expected a number, got "72.5"'],
    ['a number that is not finite', sample, 'value', Number.POSITIVE_INFINITY, 'where.0.value: value is number; expected a number, got null'],
    ['a decimal with a comma', tx, 'amount', '12,50', 'where.0.value: amount is decimal; expected a decimal number such as "-12.50", got "12,50"'],
    ['a decimal of 41 characters', tx, 'amount', '1'.repeat(41), `where.0.value: amount is decimal; expected a decimal number such as "-12.50", got "${'1'.repeat(41)}"`],
    ['a decimal number that is not finite', tx, 'amount', Number.NaN, 'where.0.value: amount is decimal; expected a decimal number such as "-12.50", got null'],
    ['a boolean as text', tx, 'pending', 'true', 'where.0.value: pending is boolean; expected true or false, got "true"'],
    ['a number for a date', tx, 'posted_on', 20260301, `where.0.value: posted_on is date; expected a real calendar date YYYY-MM-DD with a year from 0001 to 9999${RELATIVE_HINT}, got 20260301`],
    ['a number for an instant', tx, 'synced_at', 0, `where.0.value: synced_at is timestamp; expected an ISO 8601 instant such as 2026-03-01T00:00:00Z, on a real calendar date with a year from 0001 to 9999${RELATIVE_HINT}, got 0`],
    ['any value for a JSON field', event, 'attendees', 'x', 'where.0.value: attendees is json; expected nothing: JSON fields cannot be filtered, got "x"'],
  ])('refuses %s', (_label, object, name, value, message) => {
    expect(refusal(() => coerceValue(field(object, name), value, 'where.0.value'))).toBe(message);
  });
});

describe('a value that is no scalar of the type is refused, not bound', () => {
  it.each([
    ['a list holding a date, for a date', tx, 'posted_on', ['2026-03-01'], 'where.0.value: posted_on is date; expected a real calendar date'],
    ['a list holding a date, for an instant', tx, 'synced_at', ['2026-03-01'], 'where.0.value: synced_at is timestamp; expected an ISO 8601 instant'],
    ['a list holding a UUID, for a UUID', tx, 'connection_id', ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'], 'where.0.value: connection_id is uuid; expected a UUID'],
    ['a list holding a decimal, for a decimal', tx, 'amount', ['12.50'], 'where.0.value: amount is decimal; expected a decimal number'],
    ['nothing, for a string', tx, 'description', undefined, 'where.0.value: description is string; expected a string, got undefined'],
  ])('%s', (_label, object, name, value, message) => {
    expect(refusal(() => coerceValue(field(object, name), value, 'where.0.value'))).toContain(message);
  });
});

describe('filters', () => {
  it('refuses an operator its field type does not take, naming those it does', () => {
    expect(refusal(() => plan(tx, { where: [{ field: 'pending', op: 'lt', value: true }] }))).toBe(
      "where.0: op 'lt' does not apply to pending (boolean); valid ops: eq, ne, is_null",
    );
    expect(refusal(() => plan(tx, { where: [{ field: 'category', op: 'overlaps', value: ['a', 'b'] }] }))).toBe(
      "where.0: op 'overlaps' does not apply to category (string); valid ops: eq, ne, lt, lte, gt, gte, between, in, not_in, contains, starts_with, is_null",
    );
  });

  it('refuses a field that cannot be filtered, naming those that can', () => {
    expect(refusal(() => plan(sample, { where: [{ field: 'also_reported_by', op: 'contains', value: 'x' }] }))).toBe(
      "where.0: field 'also_reported_by' cannot be used here; filterable fields: id, connection_id, source, source_id, synced_at, metric, value, unit, start_at, end_at, device",
    );
  });

  it('numbers each filter in its refusal', () => {
    expect(refusal(() => plan(tx, { where: [{ field: 'pending', op: 'eq', value: true }, { field: 'amount', op: 'eq', value: 'x' }] }))).toContain('where.1.value: amount is decimal');
  });

  it.each([
    ['ne', 'description', 'x', 'x'],
    ['contains', 'description', 'Café', 'Café'],
    ['starts_with', 'merchant_name', 'Sh', 'Sh'],
    ['gte', 'amount', 10, '10'],
  ])('keeps %s with its one value, coerced', (op, name, value, bound) => {
    expect(plan(tx, { where: [{ field: name, op, value }] }).filters).toEqual([{ field: field(tx, name), op, value: bound }]);
  });

  it.each([
    ['eq', [1, 2], 'where.0: eq takes one value, not a list'],
    ['eq', undefined, 'where.0: eq needs a value; use is_null to match missing values'],
    ['lt', null, 'where.0: lt needs a value; use is_null to match missing values'],
  ])('refuses %s with %j', (op, value, message) => {
    expect(refusal(() => plan(tx, { where: [{ field: 'amount', op, value }] }))).toBe(message);
  });

  it.each(['eq', 'ne'])('keeps %s with an empty string, which matches empty text', (op) => {
    expect(plan(tx, { where: [{ field: 'description', op, value: '' }] }).filters).toEqual([{ field: field(tx, 'description'), op, value: '' }]);
  });

  it.each(['contains', 'starts_with'])('refuses %s with an empty string', (op) => {
    expect(refusal(() => plan(tx, { where: [{ field: 'description', op, value: '' }] }))).toBe(`where.0: ${op} needs a non-empty string`);
  });

  it('is_null means missing unless told false', () => {
    expect(plan(tx, { where: [{ field: 'merchant_name', op: 'is_null' }] }).filters[0]).toEqual({ field: field(tx, 'merchant_name'), op: 'is_null', value: true });
    expect(plan(tx, { where: [{ field: 'merchant_name', op: 'is_null', value: false }] }).filters[0]?.value).toBe(false);
    expect(plan(tx, { where: [{ field: 'merchant_name', op: 'is_null', value: true }] }).filters[0]?.value).toBe(true);
    expect(refusal(() => plan(tx, { where: [{ field: 'merchant_name', op: 'is_null', value: 'yes' }] }))).toBe('where.0: is_null takes true or false');
  });

  it.each(['in', 'not_in'])('%s takes a non-empty list, each value coerced and numbered', (op) => {
    expect(plan(tx, { where: [{ field: 'amount', op, value: [1, '2.50'] }] }).filters[0]).toEqual({ field: field(tx, 'amount'), op, value: ['1', '2.50'] });
    expect(refusal(() => plan(tx, { where: [{ field: 'amount', op, value: [] }] }))).toBe(`where.0: ${op} takes a non-empty list of values`);
    expect(refusal(() => plan(tx, { where: [{ field: 'amount', op, value: 1 }] }))).toBe(`where.0: ${op} takes a non-empty list of values`);
    expect(refusal(() => plan(tx, { where: [{ field: 'amount', op, value: [1, 'x'] }] }))).toContain('where.0.value.1: amount is decimal');
  });

  it('between takes exactly [low, high], each coerced and numbered', () => {
    expect(plan(tx, { where: [{ field: 'amount', op: 'between', value: [-5, 5] }] }).filters[0]).toEqual({ field: field(tx, 'amount'), op: 'between', value: ['-5', '5'] });
    for (const value of [[1], [1, 2, 3], 5]) {
      expect(refusal(() => plan(tx, { where: [{ field: 'amount', op: 'between', value }] }))).toBe('where.0: between takes [low, high]');
    }
    expect(refusal(() => plan(tx, { where: [{ field: 'amount', op: 'between', value: ['x', 1] }] }))).toContain('where.0.value.0: amount is decimal');
  });
});

describe('relative dates', () => {
  it('resolves to local days, the range ending at the midnight after the last', () => {
    const [filter] = plan(tx, { where: [{ field: 'posted_on', op: 'gte', value: 'last_month' }] }).filters;
    const resolved = { relative: 'last_month', from: '2026-02-01', to: '2026-02-28', time_zone: 'Europe/Berlin' };
    expect(filter).toEqual({
      field: field(tx, 'posted_on'),
      op: 'gte',
      value: resolved,
      resolved,
      range: { kind: 'days', from: '2026-02-01', toExclusive: '2026-03-01', zone: 'Europe/Berlin' },
    });
  });

  it('works on instants too', () => {
    const [filter] = plan(tx, { where: [{ field: 'synced_at', op: 'eq', value: 'today' }] }).filters;
    expect(filter?.range).toEqual({ kind: 'days', from: '2026-03-11', toExclusive: '2026-03-12', zone: 'Europe/Berlin' });
  });

  it.each(['ne', 'between', 'in'])('refuses %s with a relative date', (op) => {
    expect(refusal(() => plan(tx, { where: [{ field: 'posted_on', op, value: 'yesterday' }] }))).toBe(
      `where.0: a relative date works with eq, gte, gt, lt, lte, overlaps, not ${op}`,
    );
  });

  it('refuses a number of days out of range', () => {
    expect(refusal(() => plan(tx, { where: [{ field: 'posted_on', op: 'gte', value: 'last_0_days' }] }))).toBe('where.0.value: last_0_days: N is from 1 to 3660');
  });

  it('is only text on a text field', () => {
    expect(plan(tx, { where: [{ field: 'description', op: 'eq', value: 'today' }] }).filters[0]).toEqual({ field: field(tx, 'description'), op: 'eq', value: 'today' });
  });
});

describe('overlaps', () => {
  it('takes [low, high] on the start of a span of instants, with the span end', () => {
    const [filter] = plan(event, { where: [{ field: 'start_at', op: 'overlaps', value: ['2026-03-01T00:00:00Z', '2026-03-02'] }] }).filters;
    const range = { kind: 'values', low: '2026-03-01T00:00:00Z', high: '2026-03-02T00:00:00Z' };
    expect(filter).toEqual({ field: field(event, 'start_at'), op: 'overlaps', range, value: range, spanEnd: field(event, 'end_at') });
  });

  it('takes a pair of days on the start of a span of days, up to the midnight after the second', () => {
    const [filter] = plan(event, { where: [{ field: 'start_date', op: 'overlaps', value: ['2026-03-01', '2026-03-31'] }] }).filters;
    const range = { kind: 'days', from: '2026-03-01', toExclusive: '2026-04-01', zone: 'Europe/Berlin' };
    expect(filter).toEqual({ field: field(event, 'start_date'), op: 'overlaps', range, value: range, spanEnd: field(event, 'end_date') });
  });

  it('takes a relative date, echoed as resolved', () => {
    const [filter] = plan(sample, { where: [{ field: 'start_at', op: 'overlaps', value: 'this_week' }] }).filters;
    const resolved = { relative: 'this_week', from: '2026-03-09', to: '2026-03-15', time_zone: 'Europe/Berlin' };
    expect(filter).toEqual({
      field: field(sample, 'start_at'),
      op: 'overlaps',
      range: { kind: 'days', from: '2026-03-09', toExclusive: '2026-03-16', zone: 'Europe/Berlin' },
      resolved,
      value: resolved,
      spanEnd: field(sample, 'end_at'),
    });
  });

  it.each([['a single instant', '2026-03-01'], ['three values', ['2026-03-01', '2026-03-02', '2026-03-03']], ['one value', ['2026-03-01']]])('refuses %s', (_label, value) => {
    expect(refusal(() => plan(event, { where: [{ field: 'start_at', op: 'overlaps', value }] }))).toBe(
      'where.0: overlaps takes [low, high] or a relative date (today, yesterday, tomorrow, this_week, last_week, next_week, this_month, last_month, next_month, this_year, last_year, last_N_days, next_N_days)',
    );
  });

  it('numbers a bad end of the pair', () => {
    expect(refusal(() => plan(event, { where: [{ field: 'start_at', op: 'overlaps', value: ['2026-03-01', 'soon'] }] }))).toContain('where.0.value.1: start_at is timestamp');
  });

  it('applies only to the start of a span, naming the spans', () => {
    expect(refusal(() => plan(event, { where: [{ field: 'end_at', op: 'overlaps', value: 'today' }] }))).toBe(
      'where.0: overlaps applies to the start field of a span; spans of calendar.event: start_at (to end_at), start_date (to end_date)',
    );
    expect(refusal(() => plan(tx, { where: [{ field: 'posted_on', op: 'overlaps', value: 'today' }] }))).toBe(
      'where.0: overlaps applies to the start field of a span; spans of finance.transaction: none',
    );
  });
});

describe('order', () => {
  it("is the object's natural order, then id in the direction of the last", () => {
    expect(plan(tx).order).toEqual([
      { field: field(tx, 'date'), direction: 'desc' },
      { field: field(tx, 'id'), direction: 'desc' },
    ]);
    const account = findObject('finance.account') as ObjectDef;
    expect(plan(account).order.map((entry) => [entry.field.name, entry.direction])).toEqual([
      ['institution_name', 'asc'],
      ['name', 'asc'],
      ['id', 'asc'],
    ]);
  });

  it('is the order asked for, ascending unless told, then id', () => {
    expect(plan(tx, { order_by: [{ field: 'amount' }, { field: 'posted_on', direction: 'desc' }] }).order.map((entry) => [entry.field.name, entry.direction])).toEqual([
      ['amount', 'asc'],
      ['posted_on', 'desc'],
      ['id', 'desc'],
    ]);
  });

  it('is id alone, ascending, for an empty order_by', () => {
    expect(plan(tx, { order_by: [] }).order).toEqual([{ field: field(tx, 'id'), direction: 'asc' }]);
  });

  it('adds no second id when id is ordered by', () => {
    expect(plan(tx, { order_by: [{ field: 'id', direction: 'desc' }, { field: 'amount' }] }).order.map((entry) => [entry.field.name, entry.direction])).toEqual([
      ['id', 'desc'],
      ['amount', 'asc'],
    ]);
  });

  it('refuses a field named twice, and a field that cannot be sorted on', () => {
    expect(refusal(() => plan(tx, { order_by: [{ field: 'amount' }, { field: 'amount', direction: 'desc' }] }))).toBe('order_by: a field is named twice');
    expect(refusal(() => plan(workout, { order_by: [{ field: 'start_at' }, { field: 'duplicate_of' }] }))).toMatch(/^order_by\.1: field 'duplicate_of' cannot be used here; sortable fields: id, /);
  });
});

describe('select', () => {
  it('is id first, then the fields asked for, each once', () => {
    expect(plan(tx, { select: ['amount', 'id', 'description', 'amount'] }).select.map((entry) => entry.name)).toEqual(['id', 'amount', 'description']);
  });

  it('is every field of the object by default', () => {
    expect(plan(sample).select).toEqual(sample.fields);
  });

  it('refuses an unknown field, numbered after id', () => {
    expect(refusal(() => plan(tx, { select: ['amount', 'nope'] }))).toMatch(/^select\.2: unknown field 'nope' on finance\.transaction; selectable fields: id, connection_id, /);
  });

  it('is not used with an aggregate', () => {
    expect(refusal(() => plan(tx, { select: ['amount'], aggregate: { metrics: [{ fn: 'count' }] } }))).toBe('select: not used with aggregate; name fields in group_by and metrics');
  });
});

describe('the plan', () => {
  it('carries the object, the filters and the limit', () => {
    const result = plan(tx, { where: [{ field: 'pending', op: 'eq', value: true }], limit: 7 });
    expect(result.object).toBe(tx);
    expect(result.limit).toBe(7);
    expect(result.filters).toHaveLength(1);
    expect(result.aggregate).toBeUndefined();
  });

  it("of an aggregate has the groups' order, no select, and its filters and limit", () => {
    const result = plan(tx, { where: [{ field: 'pending', op: 'eq', value: false }], limit: 3, aggregate: { group_by: ['category'], metrics: [{ fn: 'count' }] } });
    expect(result.select).toEqual([]);
    expect(result.limit).toBe(3);
    expect(result.filters).toEqual([{ field: field(tx, 'pending'), op: 'eq', value: false }]);
    expect(result.order).toBe(result.aggregate?.order);
    expect(result.order.map((entry) => [entry.field.name, entry.direction])).toEqual([['category', 'asc']]);
    expect(result.aggregate?.zone).toBe('Europe/Berlin');
  });

  it('resolves relative dates in UTC on the current day when given no clock', () => {
    const [filter] = planQuery(tx, QueryInputSchema.parse({ object: 'finance.transaction', where: [{ field: 'posted_on', op: 'eq', value: 'today' }] })).filters;
    const today = new Date().toISOString().slice(0, 10);
    expect(filter?.resolved).toEqual({ relative: 'today', from: today, to: today, time_zone: 'UTC' });
  });
});
