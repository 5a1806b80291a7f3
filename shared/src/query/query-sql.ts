import { sql, type FragmentSqlToken, type ListSqlToken } from 'slonik';
import { ARRAY_ELEMENT_TYPES, columnOf, SQL_TYPES, type FieldDef } from '../sectors/index.ts';
import type { CursorValues } from './query-cursor.ts';
import { computedSql } from './query-computed.ts';
import type { AggregatePlan, FilterPlan, GroupPlan, OrderPlan, QueryPlan, RangePlan } from './query-plan.ts';
import { builtOncePer } from './built-once.ts';
import { visibleRowsSql } from './query-visible.ts';

type Fragment = FragmentSqlToken | ListSqlToken;

const column = builtOncePer((fieldDef: FieldDef): FragmentSqlToken =>
  fieldDef.computed ? computedSql(fieldDef.computed) : sql.fragment`${sql.identifier([columnOf(fieldDef)])}`,
);
const selectedColumn = builtOncePer((fieldDef: FieldDef) => sql.fragment`${column(fieldDef)} AS ${sql.identifier([fieldDef.name])}`);
/**
 * A field's ORDER BY terms, missing values last in both directions. A field that is never missing says
 * nothing of nulls, so an index on `(…, id DESC)` serves the order itself: with `id DESC NULLS LAST` it
 * could serve only the first column, and Postgres sorted every row of the first value to find a page.
 */
const ordering = builtOncePer((fieldDef: FieldDef) =>
  fieldDef.nullable
    ? { asc: sql.fragment`${column(fieldDef)} ASC NULLS LAST`, desc: sql.fragment`${column(fieldDef)} DESC NULLS LAST` }
    : { asc: sql.fragment`${column(fieldDef)} ASC`, desc: sql.fragment`${column(fieldDef)} DESC` },
);
const tableOf = builtOncePer((object: QueryPlan['object']) => sql.fragment`${sql.identifier([object.table])}`);
const typed = (fieldDef: FieldDef, value: unknown) => sql.fragment`${value as string | number | boolean | null}::${SQL_TYPES[fieldDef.type]}`;
const anyOf = (fieldDef: FieldDef, values: unknown[]) =>
  sql.array(values as Array<string | number | boolean>, ARRAY_ELEMENT_TYPES[fieldDef.type] ?? 'text');

function likePattern(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('%', '\\%').replaceAll('_', '\\_');
}

/** The instant a local day starts in a zone (its midnight there), as a timestamptz expression. */
const localMidnight = (date: string, zone: string) => sql.fragment`(${date}::date::timestamp AT TIME ZONE ${zone}::text)`;

/** The low end (included) and high end of a range as expressions comparable with the field. */
function rangeEnds(field: FieldDef, range: RangePlan): { low: Fragment; high: Fragment; highIncluded: boolean } {
  if (range.kind === 'values') return { low: typed(field, range.low), high: typed(field, range.high), highIncluded: true };
  if (field.type === 'date') return { low: typed(field, range.from), high: typed(field, range.toExclusive), highIncluded: false };
  return { low: localMidnight(range.from, range.zone), high: localMidnight(range.toExclusive, range.zone), highIncluded: false };
}

/** A relative date compared with eq (within the range), gte, gt, lt or lte. */
function rangeFilterSql(field: FieldDef, op: FilterPlan['op'], range: RangePlan): Fragment {
  const col = column(field);
  const { low, high } = rangeEnds(field, range);
  switch (op) {
    case 'gte':
      return sql.fragment`${col} >= ${low}`;
    case 'lt':
      return sql.fragment`${col} < ${low}`;
    case 'gt':
      return sql.fragment`${col} >= ${high}`;
    case 'lte':
      return sql.fragment`${col} < ${high}`;
    default:
      return sql.fragment`(${col} >= ${low} AND ${col} < ${high})`;
  }
}

/**
 * Rows whose span [start, end) overlaps the range. A span with no end (or a point) overlaps when its
 * start lies in the range; a span that starts before the range overlaps when it ends after its start.
 */
function overlapsSql(start: FieldDef, end: FieldDef, range: RangePlan): Fragment {
  const { low, high, highIncluded } = rangeEnds(start, range);
  const s = column(start);
  const e = column(end);
  const beforeHigh = highIncluded ? sql.fragment`${s} <= ${high}` : sql.fragment`${s} < ${high}`;
  return sql.fragment`(${beforeHigh} AND (${e} > ${low} OR ${s} >= ${low}))`;
}

export function filterSql({ field, op, value, range, spanEnd }: FilterPlan): Fragment {
  const col = column(field);
  // A range comes with a relative date, and with overlaps, which alone has a span end.
  if (range) return spanEnd ? overlapsSql(field, spanEnd, range) : rangeFilterSql(field, op, range);
  switch (op) {
    case 'eq':
      return sql.fragment`${col} = ${typed(field, value)}`;
    case 'ne':
      return sql.fragment`${col} IS DISTINCT FROM ${typed(field, value)}`;
    case 'lt':
      return sql.fragment`${col} < ${typed(field, value)}`;
    case 'lte':
      return sql.fragment`${col} <= ${typed(field, value)}`;
    case 'gt':
      return sql.fragment`${col} > ${typed(field, value)}`;
    case 'gte':
      return sql.fragment`${col} >= ${typed(field, value)}`;
    case 'between': {
      const [low, high] = value as [unknown, unknown];
      return sql.fragment`${col} BETWEEN ${typed(field, low)} AND ${typed(field, high)}`;
    }
    case 'in':
      return sql.fragment`${col} = ANY(${anyOf(field, value as unknown[])})`;
    case 'not_in':
      return sql.fragment`(${col} IS NULL OR NOT (${col} = ANY(${anyOf(field, value as unknown[])})))`;
    case 'contains':
      return field.type === 'string[]'
        ? sql.fragment`${col} @> ARRAY[${value as string}::text]`
        : sql.fragment`unaccent(${col}) ILIKE unaccent(${`%${likePattern(value as string)}%`}::text) ESCAPE '\\'`;
    case 'starts_with':
      // Accents and case both ignored, so "Muller" finds "Müller" (unaccent is created by a migration).
      return sql.fragment`unaccent(${col}) ILIKE unaccent(${`${likePattern(value as string)}%`}::text) ESCAPE '\\'`;
    case 'is_null':
      return value ? sql.fragment`${col} IS NULL` : sql.fragment`${col} IS NOT NULL`;
    case 'overlaps':
      throw new Error('overlaps is planned with a range');
  }
}

const COMMA = sql.fragment`, `;

function orderSql(order: readonly OrderPlan[]): Fragment {
  return sql.join(
    order.map(({ field, direction }) => ordering(field)[direction]),
    COMMA,
  );
}

/**
 * Rows strictly after the cursor row in the given order (missing values last in both directions).
 * A plain row comparison where it is exact (no nullable field, one direction), which an index can
 * serve; otherwise the lexicographic chain: after₁ OR (equal₁ AND (after₂ OR (equal₂ AND …))).
 */
export function afterCursorSql(order: readonly OrderPlan[], values: CursorValues): Fragment {
  const leading = order[0]?.direction;
  if (order.every((entry) => entry.direction === leading && !entry.field.nullable)) {
    const left = sql.join(order.map((entry) => column(entry.field)), COMMA);
    const right = sql.join(order.map((entry, i) => typed(entry.field, values[i])), COMMA);
    return leading === 'desc' ? sql.fragment`(${left}) < (${right})` : sql.fragment`(${left}) > (${right})`;
  }
  let condition: Fragment = sql.fragment`FALSE`;
  for (let i = order.length - 1; i >= 0; i -= 1) {
    const { field, direction } = order[i] as OrderPlan;
    const value = values[i] ?? null;
    const col = column(field);
    if (value === null) {
      condition = sql.fragment`(${col} IS NULL AND ${condition})`;
      continue;
    }
    const beyond = direction === 'asc' ? sql.fragment`${col} > ${typed(field, value)}` : sql.fragment`${col} < ${typed(field, value)}`;
    const after = field.nullable ? sql.fragment`(${beyond} OR ${col} IS NULL)` : beyond;
    condition = sql.fragment`(${after} OR (${col} = ${typed(field, value)} AND ${condition}))`;
  }
  return condition;
}

/** The plan's conditions after the object's base filter (the rows no read may see). */
function whereSql(plan: QueryPlan, conditions: readonly Fragment[]): Fragment {
  return sql.join([visibleRowsSql(plan.object), ...conditions], sql.fragment` AND `);
}

/** The alias of the i-th order column's exact text in a page row (not a field name: it has a colon). */
export const cursorColumn = (i: number) => `cursor:${i}`;

/** The i-th order column's exact text, under its cursor alias. */
const cursorKey = builtOncePer((fieldDef: FieldDef) => {
  const byPlace: FragmentSqlToken[] = [];
  return (i: number) => (byPlace[i] ??= sql.fragment`${column(fieldDef)}::text AS ${sql.identifier([cursorColumn(i)])}`);
});

/** Distinct select lists kept per object; past this many, the oldest is built again when next used. */
const SELECT_LISTS_KEPT = 64;

/**
 * A page's select list (the fields, then the order columns' text) as one token, built once per list:
 * a list of tokens is rendered member by member every time it is embedded.
 */
const selectLists = builtOncePer((_object: QueryPlan['object']) => new Map<string, FragmentSqlToken>());

function selectListSql(plan: QueryPlan): FragmentSqlToken {
  const lists = selectLists(plan.object);
  const name = JSON.stringify([plan.select.map((f) => f.name), plan.order.map((entry) => entry.field.name)]);
  let list = lists.get(name);
  if (list === undefined) {
    const keys = plan.order.map(({ field }, i) => cursorKey(field)(i));
    list = sql.fragment`${sql.join([...plan.select.map(selectedColumn), ...keys], COMMA)}`;
    if (lists.size >= SELECT_LISTS_KEPT) lists.delete(lists.keys().next().value as string);
    lists.set(name, list);
  }
  return list;
}

/**
 * The page query: selected fields, filters, the cursor bound, and one row past the limit. Beside the
 * row come the order columns as Postgres's own text (`col::text`), because the served value is not
 * exact (instants are served with milliseconds, stored with microseconds); the next cursor is built
 * from that text and cast back to the column's type, so it names the last row exactly.
 */
export function pageSql(plan: QueryPlan, cursorValues?: CursorValues) {
  const conditions = plan.filters.map(filterSql);
  if (cursorValues) conditions.push(afterCursorSql(plan.order, cursorValues));
  return sql.fragment`
    SELECT ${selectListSql(plan)}
    FROM ${tableOf(plan.object)}
    WHERE ${whereSql(plan, conditions)}
    ORDER BY ${orderSql(plan.order)}
    LIMIT ${plan.limit + 1}`;
}

function metricSql(metric: AggregatePlan['metrics'][number]): Fragment {
  if (!metric.field) return sql.fragment`count(*)`;
  const col = column(metric.field);
  switch (metric.fn) {
    case 'count':
      return sql.fragment`count(${col})`;
    case 'sum':
      return sql.fragment`sum(${col})`;
    case 'avg':
      return metric.field.type === 'decimal' ? sql.fragment`round(avg(${col}), 4)` : sql.fragment`avg(${col})::float8`;
    case 'min':
      return sql.fragment`min(${col})`;
    case 'max':
      return sql.fragment`max(${col})`;
  }
}

/** A group's value: the field, or its local day, week (from Monday) or month as the date it starts on. */
function groupSql(group: GroupPlan, zone: string): Fragment {
  const col = column(group.field);
  if (!group.bucket) return col;
  const local = group.field.type === 'timestamp' ? sql.fragment`(${col} AT TIME ZONE ${zone}::text)` : sql.fragment`${col}::timestamp`;
  return sql.fragment`date_trunc(${group.bucket}::text, ${local})::date`;
}

/**
 * The groups of an aggregate as a page: computed in an inner query, then ordered, bounded by the cursor
 * and limited like rows, with each order column's text beside it for the next cursor.
 */
export function aggregateSql(plan: QueryPlan, aggregate: AggregatePlan, cursorValues?: CursorValues) {
  const groups = aggregate.groupBy.map((group) => sql.fragment`${groupSql(group, aggregate.zone)} AS ${sql.identifier([group.alias])}`);
  const metrics = aggregate.metrics.map((m) => sql.fragment`${metricSql(m)} AS ${sql.identifier([m.alias])}`);
  // By output name: a bucket's expression holds parameters, and a repeated expression would bind new ones.
  const grouping = aggregate.groupBy.length === 0 ? sql.fragment`` : sql.fragment`GROUP BY ${sql.join(aggregate.groupBy.map((g) => sql.identifier([g.alias])), COMMA)}`;
  const outputs = [...aggregate.groupBy.map((g) => g.alias), ...aggregate.metrics.map((m) => m.alias)].map((alias) => sql.identifier(['g', alias]));
  const keys = aggregate.order.map(({ field }, i) => cursorKey(field)(i));
  const bound = cursorValues ? afterCursorSql(aggregate.order, cursorValues) : sql.fragment`TRUE`;
  const ordering = aggregate.order.length === 0 ? sql.fragment`` : sql.fragment`ORDER BY ${orderSql(aggregate.order)}`;
  return sql.fragment`
    SELECT ${sql.join([...outputs, ...keys], COMMA)}
    FROM (
      SELECT ${sql.join([...groups, ...metrics], COMMA)}
      FROM ${tableOf(plan.object)}
      WHERE ${whereSql(plan, plan.filters.map(filterSql))}
      ${grouping}
    ) AS g
    WHERE ${bound}
    ${ordering}
    LIMIT ${plan.limit + 1}`;
}

/** The metrics of an aggregate that a subtraction can give without the possible twins: counts and sums. */
export const subtractableMetrics = (aggregate: AggregatePlan) => aggregate.metrics.filter((metric) => metric.fn === 'count' || metric.fn === 'sum');

/**
 * Per group, what the later copy of each pair of possible twins (design 8.3) adds to the group's counts and
 * sums, counting only pairs whose two rows both pass the filters and fall in the same group. The rows are
 * read once through the partial index on rows that have a twin (none at all in most caches).
 */
export function possibleTwinsSql(plan: QueryPlan, aggregate: AggregatePlan) {
  const metrics = subtractableMetrics(aggregate);
  const groups = aggregate.groupBy.map((group) => sql.fragment`${groupSql(group, aggregate.zone)} AS ${sql.identifier([group.alias])}`);
  const values = metrics.flatMap((metric, i) => (metric.field ? [sql.fragment`${column(metric.field)} AS ${sql.identifier([`m:${i}`])}`] : []));
  const sameGroup = aggregate.groupBy.map((group) => sql.fragment`o.${sql.identifier([group.alias])} IS NOT DISTINCT FROM r.${sql.identifier([group.alias])}`);
  const outer = metrics.map((metric, i) => {
    const value = sql.identifier(['r', `m:${i}`]);
    const fn = metric.field ? (metric.fn === 'count' ? sql.fragment`count(${value})` : sql.fragment`sum(${value})`) : sql.fragment`count(*)`;
    return sql.fragment`${fn} AS ${sql.identifier([metric.alias])}`;
  });
  const outputs = aggregate.groupBy.map((group) => sql.identifier(['r', group.alias]));
  return sql.fragment`
    WITH twins AS (
      SELECT ${sql.join([sql.fragment`id`, sql.fragment`possible_twin_id`, sql.fragment`possible_twin_is_later`, ...groups, ...values], COMMA)}
      FROM ${tableOf(plan.object)}
      WHERE ${whereSql(plan, [sql.fragment`possible_twin_id IS NOT NULL`, ...plan.filters.map(filterSql)])}
    )
    SELECT ${sql.join([...outputs, ...outer], COMMA)}
    FROM twins r JOIN twins o ON o.id = r.possible_twin_id
    WHERE ${sql.join([sql.fragment`r.possible_twin_is_later`, ...sameGroup], sql.fragment` AND `)}
    ${outputs.length === 0 ? sql.fragment`` : sql.fragment`GROUP BY ${sql.join(outputs, COMMA)}`}
    HAVING count(*) > 0`;
}
