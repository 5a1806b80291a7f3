import type { FieldDef, FieldType, ObjectDef } from '../sectors/index.ts';
import { QueryError } from './query-errors.ts';
import type { Bucket, MetricFn, ParsedQueryInput } from './query-input.ts';
import { fieldOf, type OrderPlan } from './query-plan-fields.ts';

/** One group of an aggregate: a field, or a date or timestamp cut to a local day, week or month. */
export type GroupPlan = { field: FieldDef; bucket?: Bucket; alias: string; output: FieldDef };
export type MetricPlan = { fn: MetricFn; field?: FieldDef; alias: string; output: FieldDef };
export type AggregatePlan = {
  groupBy: GroupPlan[];
  metrics: MetricPlan[];
  /** The requested order of the groups, then every group output ascending, which makes a group unique. */
  order: OrderPlan[];
  /** The person's time zone, for buckets of instants. */
  zone: string;
};

const ORDERED: ReadonlySet<FieldType> = new Set(['string', 'integer', 'number', 'decimal', 'timestamp', 'date']);
const NUMERIC: ReadonlySet<FieldType> = new Set(['integer', 'number', 'decimal']);

/**
 * A column of the aggregate's output, described like a field so that ordering and keyset paging work on
 * groups as they do on rows. Its `column` is its alias in the inner query; the type decides the cast of
 * a cursor value.
 */
const outputColumn = (alias: string, type: FieldType, nullable: boolean): FieldDef => ({
  name: alias,
  type,
  description: '',
  filterable: false,
  sortable: true,
  nullable,
  column: alias,
});

/** The type of a metric's value: counts and sums of whole numbers are compared as numerics. */
function metricType(fn: MetricFn, field: FieldDef | undefined): FieldType {
  if (fn === 'count' || !field) return 'decimal';
  if (fn === 'sum') return field.type === 'number' ? 'number' : 'decimal';
  if (fn === 'avg') return field.type === 'decimal' ? 'decimal' : 'number';
  return field.type;
}

type GroupInput = NonNullable<NonNullable<ParsedQueryInput['aggregate']>['group_by']>[number];

function planGroup(object: ObjectDef, entry: GroupInput, index: number): GroupPlan {
  const where = `aggregate.group_by.${index}`;
  if (typeof entry === 'string') {
    const field = fieldOf(object, entry, where, (f) => f.sortable, 'groupable');
    return { field, alias: field.name, output: outputColumn(field.name, field.type, field.nullable) };
  }
  const field = fieldOf(object, entry.field, `${where}.field`, (f) => f.type === 'date' || f.type === 'timestamp', 'date or timestamp');
  const alias = `${field.name}_${entry.bucket}`;
  return { field, bucket: entry.bucket, alias, output: outputColumn(alias, 'date', field.nullable) };
}

function planMetric(object: ObjectDef, metric: NonNullable<ParsedQueryInput['aggregate']>['metrics'][number], index: number): MetricPlan {
  const where = `aggregate.metrics.${index}`;
  if (!metric.field) {
    if (metric.fn !== 'count') throw new QueryError(`${where}: ${metric.fn} needs a field`);
    return { fn: 'count', alias: 'count', output: outputColumn('count', 'decimal', false) };
  }
  const usable = (f: FieldDef) =>
    metric.fn === 'count' ? f.type !== 'json' : metric.fn === 'sum' || metric.fn === 'avg' ? NUMERIC.has(f.type) : ORDERED.has(f.type);
  const field = fieldOf(object, metric.field, where, usable, `${metric.fn}-able`);
  const alias = `${metric.fn}_${field.name}`;
  return { fn: metric.fn, field, alias, output: outputColumn(alias, metricType(metric.fn, field), metric.fn !== 'count') };
}

/**
 * Groups, metrics and their order. `order_by` names outputs (a group, `<field>_<bucket>`, or a metric such
 * as `sum_amount`); with a limit that is a top N. Without it, groups come in group_by order.
 */
export function planAggregate(
  object: ObjectDef,
  aggregate: NonNullable<ParsedQueryInput['aggregate']>,
  orderBy: ParsedQueryInput['order_by'],
  zone: string,
): AggregatePlan {
  const groupBy = (aggregate.group_by ?? []).map((entry, i) => planGroup(object, entry, i));
  const metrics = aggregate.metrics.map((metric, i) => planMetric(object, metric, i));
  const outputs = [...groupBy.map((group) => group.output), ...metrics.map((metric) => metric.output)];
  const aliases = outputs.map((output) => output.name);
  const duplicate = aliases.find((alias, i) => aliases.indexOf(alias) !== i);
  if (duplicate) throw new QueryError(`aggregate: '${duplicate}' is asked for twice`);

  const order: OrderPlan[] = (orderBy ?? []).map((entry, i) => {
    const output = outputs.find((candidate) => candidate.name === entry.field);
    if (!output) throw new QueryError(`order_by.${i}: '${entry.field}' is not an output of this aggregate; order by one of: ${aliases.join(', ')}`);
    return { field: output, direction: entry.direction ?? 'asc' };
  });
  const named = new Set(order.map((entry) => entry.field.name));
  if (named.size !== order.length) throw new QueryError('order_by: an output is named twice');
  for (const group of groupBy) if (!named.has(group.alias)) order.push({ field: group.output, direction: 'asc' });
  return { groupBy, metrics, order, zone };
}
