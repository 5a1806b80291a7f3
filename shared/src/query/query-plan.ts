import type { FieldDef, FieldType, ObjectDef } from '../sectors/index.ts';
import { QueryError } from './query-errors.ts';
import { calendarDate, isoInstant, isStorableText } from './query-values.ts';
import { dayAfter, looksRelative, resolveRelativeDate, RELATIVE_DATES, type DateRange } from './query-dates.ts';
import { MAX_STRING_VALUE, type FilterOp, type ParsedQueryInput } from './query-input.ts';
import { planAggregate, type AggregatePlan } from './query-aggregate-plan.ts';
import { fieldOf, type OrderPlan } from './query-plan-fields.ts';

export type { AggregatePlan, GroupPlan, MetricPlan } from './query-aggregate-plan.ts';
export type { OrderPlan } from './query-plan-fields.ts';

/**
 * A range a filter compares with: local days (a relative date, or a date pair), both ends included,
 * whose instants are the local midnights of `from` and of the day after `to` in `zone`; or two
 * values of the field's own type, both included.
 */
export type RangePlan =
  | { kind: 'days'; from: string; toExclusive: string; zone: string }
  | { kind: 'values'; low: unknown; high: unknown };

export type FilterPlan = {
  field: FieldDef;
  op: FilterOp;
  value: unknown;
  /** Set for relative dates and for overlaps. */
  range?: RangePlan;
  /** The end field of the span, for overlaps. */
  spanEnd?: FieldDef;
  /** The relative date as resolved, echoed in the result. */
  resolved?: DateRange;
};

export type QueryPlan = {
  object: ObjectDef;
  filters: FilterPlan[];
  /** The requested (or default) order, with `id` appended as the tiebreak (for groups: every group). */
  order: OrderPlan[];
  select: FieldDef[];
  limit: number;
  aggregate?: AggregatePlan;
};

/** The person's time zone and clock, for relative dates and local buckets. */
export type PlanClock = { zone: string; now: Date };

const OPS_BY_TYPE: Record<FieldType, readonly FilterOp[]> = {
  string: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'not_in', 'contains', 'starts_with', 'is_null'],
  uuid: ['eq', 'ne', 'in', 'not_in', 'is_null'],
  integer: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'not_in', 'is_null'],
  number: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'not_in', 'is_null'],
  decimal: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'not_in', 'is_null'],
  boolean: ['eq', 'ne', 'is_null'],
  timestamp: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'not_in', 'is_null', 'overlaps'],
  date: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'not_in', 'is_null', 'overlaps'],
  'string[]': ['contains', 'is_null'],
  json: [],
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const EXPECTED_DATE = 'a real calendar date YYYY-MM-DD with a year from 0001 to 9999';
export const EXPECTED_INSTANT = 'an ISO 8601 instant such as 2026-03-01T00:00:00Z, on a real calendar date with a year from 0001 to 9999';
/** Ops that take a relative date (`last_month`) on a date or timestamp field. */
export const RELATIVE_OPS: readonly FilterOp[] = ['eq', 'gte', 'gt', 'lt', 'lte', 'overlaps'];
const RELATIVE_HINT = ` (or, with ${RELATIVE_OPS.join(', ')}, a relative date: ${RELATIVE_DATES.join(', ')})`;
export const EXPECTED_TEXT = 'a string without NUL characters or unpaired UTF-16 surrogates';
const DECIMAL = /^-?\d+(\.\d+)?$/;

/** Checks one scalar against the field's type and returns it in the form bound as a parameter. */
export function coerceValue(fieldDef: FieldDef, value: unknown, where: string): unknown {
  const fail = (expected: string): never => {
    throw new QueryError(`${where}: ${fieldDef.name} is ${fieldDef.type}; expected ${expected}, got ${JSON.stringify(value)?.slice(0, 80)}`);
  };
  switch (fieldDef.type) {
    case 'string':
    case 'string[]':
      if (typeof value !== 'string') return fail('a string');
      if (!isStorableText(value)) return fail(EXPECTED_TEXT);
      if (value.length > MAX_STRING_VALUE) return fail(`at most ${MAX_STRING_VALUE} characters`);
      return value;
    case 'uuid':
      return typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : fail('a UUID');
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value) && Math.abs(value) <= 2_147_483_647 ? value : fail('a whole number');
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? value : fail('a number');
    case 'decimal':
      if (typeof value === 'number' && Number.isFinite(value)) return String(value);
      return typeof value === 'string' && DECIMAL.test(value) && value.length <= 40 ? value : fail('a decimal number such as "-12.50"');
    case 'boolean':
      return typeof value === 'boolean' ? value : fail('true or false');
    case 'date':
      return (typeof value === 'string' && calendarDate(value)) || fail(`${EXPECTED_DATE}${RELATIVE_HINT}`);
    case 'timestamp':
      return (typeof value === 'string' && value.length <= 40 && isoInstant(value)) || fail(`${EXPECTED_INSTANT}${RELATIVE_HINT}`);
    case 'json':
      return fail('nothing: JSON fields cannot be filtered');
  }
}

type FilterInput = ParsedQueryInput['where'] extends (infer F)[] | undefined ? F : never;

/** A relative date resolved to local days, or an explicit pair for overlaps, as a range of the field. */
function rangeOf(fieldDef: FieldDef, value: unknown, where: string, clock: PlanClock): { range: RangePlan; resolved?: DateRange } {
  if (looksRelative(value)) {
    const resolved = resolveRelativeDate(value, clock.now, clock.zone);
    if (typeof resolved === 'string') throw new QueryError(`${where}.value: ${resolved}`);
    return { range: { kind: 'days', from: resolved.from, toExclusive: dayAfter(resolved.to), zone: clock.zone }, resolved };
  }
  if (!Array.isArray(value) || value.length !== 2) {
    throw new QueryError(`${where}: overlaps takes [low, high] or a relative date (${RELATIVE_DATES.join(', ')})`);
  }
  const [low, high] = value.map((item, i) => coerceValue(fieldDef, item, `${where}.value.${i}`));
  return fieldDef.type === 'date'
    ? { range: { kind: 'days', from: low as string, toExclusive: dayAfter(high as string), zone: clock.zone } }
    : { range: { kind: 'values', low, high } };
}

function planOverlaps(object: ObjectDef, fieldDef: FieldDef, value: unknown, where: string, clock: PlanClock): FilterPlan {
  const spans = object.spans ?? [];
  const span = spans.find((candidate) => candidate.start === fieldDef.name);
  if (!span) {
    const starts = spans.map((candidate) => `${candidate.start} (to ${candidate.end})`).join(', ') || 'none';
    throw new QueryError(`${where}: overlaps applies to the start field of a span; spans of ${object.name}: ${starts}`);
  }
  const spanEnd = fieldOf(object, span.end, where, () => true, '');
  return { field: fieldDef, op: 'overlaps', ...rangeOf(fieldDef, value, where, clock), value: undefined, spanEnd };
}

function planFilter(object: ObjectDef, filter: FilterInput, index: number, clock: PlanClock): FilterPlan {
  const where = `where.${index}`;
  const fieldDef = fieldOf(object, filter.field, where, (f) => f.filterable, 'filterable');
  const allowed = OPS_BY_TYPE[fieldDef.type];
  if (!allowed.includes(filter.op)) {
    throw new QueryError(`${where}: op '${filter.op}' does not apply to ${fieldDef.name} (${fieldDef.type}); valid ops: ${allowed.join(', ')}`);
  }
  const { op, value } = filter;
  if (op === 'overlaps') {
    const plan = planOverlaps(object, fieldDef, value, where, clock);
    return { ...plan, value: plan.resolved ?? plan.range };
  }
  if (looksRelative(value) && (fieldDef.type === 'date' || fieldDef.type === 'timestamp')) {
    if (!RELATIVE_OPS.includes(op)) throw new QueryError(`${where}: a relative date works with ${RELATIVE_OPS.join(', ')}, not ${op}`);
    const { range, resolved } = rangeOf(fieldDef, value, where, clock);
    return { field: fieldDef, op, value: resolved, range, resolved };
  }
  if (op === 'is_null') {
    if (value !== undefined && typeof value !== 'boolean') throw new QueryError(`${where}: is_null takes true or false`);
    return { field: fieldDef, op, value: value ?? true };
  }
  if (op === 'in' || op === 'not_in') {
    if (!Array.isArray(value) || value.length === 0) throw new QueryError(`${where}: ${op} takes a non-empty list of values`);
    return { field: fieldDef, op, value: value.map((item, i) => coerceValue(fieldDef, item, `${where}.value.${i}`)) };
  }
  if (op === 'between') {
    if (!Array.isArray(value) || value.length !== 2) throw new QueryError(`${where}: between takes [low, high]`);
    return { field: fieldDef, op, value: value.map((item, i) => coerceValue(fieldDef, item, `${where}.value.${i}`)) };
  }
  if (Array.isArray(value)) throw new QueryError(`${where}: ${op} takes one value, not a list`);
  if (value === undefined || value === null) throw new QueryError(`${where}: ${op} needs a value; use is_null to match missing values`);
  const coerced = coerceValue(fieldDef, value, `${where}.value`);
  if ((op === 'contains' || op === 'starts_with') && coerced === '') throw new QueryError(`${where}: ${op} needs a non-empty string`);
  return { field: fieldDef, op, value: coerced };
}

/** Turns validated input into a plan whose every identifier comes from the catalogue. */
export function planQuery(object: ObjectDef, input: ParsedQueryInput, clock: PlanClock = { zone: 'UTC', now: new Date() }): QueryPlan {
  const filters = (input.where ?? []).map((filter, i) => planFilter(object, filter, i, clock));
  if (input.aggregate) {
    if (input.select) throw new QueryError('select: not used with aggregate; name fields in group_by and metrics');
    const aggregate = planAggregate(object, input.aggregate, input.order_by, clock.zone);
    return { object, filters, order: aggregate.order, select: [], limit: input.limit, aggregate };
  }
  const requested = input.order_by ?? object.defaultOrder;
  const order = requested.map((entry, i) => ({
    field: fieldOf(object, entry.field, `order_by.${i}`, (f) => f.sortable, 'sortable'),
    direction: entry.direction ?? 'asc',
  }));
  const seen = new Set(order.map((entry) => entry.field.name));
  if (seen.size !== order.length) throw new QueryError('order_by: a field is named twice');
  if (!seen.has('id')) order.push({ field: fieldOf(object, 'id', 'order_by', () => true, ''), direction: order.at(-1)?.direction ?? 'asc' });
  const selectNames = input.select ? ['id', ...input.select.filter((name) => name !== 'id')] : object.fields.map((f) => f.name);
  const select = [...new Set(selectNames)].map((name, i) => fieldOf(object, name, `select.${i}`, () => true, 'selectable'));
  return { object, filters, order, select, limit: input.limit };
}
