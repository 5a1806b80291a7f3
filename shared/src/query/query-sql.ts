import { sql, type FragmentSqlToken, type ListSqlToken } from 'slonik';
import { ARRAY_ELEMENT_TYPES, columnOf, SQL_TYPES, type FieldDef } from '../sectors/index.ts';
import type { CursorValues } from './query-cursor.ts';
import type { AggregatePlan, FilterPlan, OrderPlan, QueryPlan } from './query-plan.ts';

type Fragment = FragmentSqlToken | ListSqlToken;

const column = (fieldDef: FieldDef) => sql.identifier([columnOf(fieldDef)]);
const typed = (fieldDef: FieldDef, value: unknown) =>
  sql.fragment`${value as string | number | boolean | null}::${SQL_TYPES[fieldDef.type === 'string[]' ? 'string' : fieldDef.type]}`;
const anyOf = (fieldDef: FieldDef, values: unknown[]) =>
  sql.array(values as Array<string | number | boolean>, ARRAY_ELEMENT_TYPES[fieldDef.type] ?? 'text');

function likePattern(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('%', '\\%').replaceAll('_', '\\_');
}

export function filterSql({ field, op, value }: FilterPlan): Fragment {
  const col = column(field);
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
        : sql.fragment`${col} ILIKE ${`%${likePattern(value as string)}%`} ESCAPE '\\'`;
    case 'starts_with':
      return sql.fragment`${col} ILIKE ${`${likePattern(value as string)}%`} ESCAPE '\\'`;
    case 'is_null':
      return value ? sql.fragment`${col} IS NULL` : sql.fragment`${col} IS NOT NULL`;
  }
}

function orderSql(order: readonly OrderPlan[]): Fragment {
  return sql.join(
    order.map(({ field, direction }) => (direction === 'asc' ? sql.fragment`${column(field)} ASC NULLS LAST` : sql.fragment`${column(field)} DESC NULLS LAST`)),
    sql.fragment`, `,
  );
}

/**
 * Rows strictly after the cursor row in the given order (missing values last in both directions).
 * A plain row comparison where it is exact (no nullable field, one direction), which an index can
 * serve; otherwise the lexicographic chain: after₁ OR (equal₁ AND (after₂ OR (equal₂ AND …))).
 */
export function afterCursorSql(order: readonly OrderPlan[], values: CursorValues): Fragment {
  const sameDirection = order.every((entry) => entry.direction === order[0]?.direction);
  if (sameDirection && order.every((entry) => !entry.field.nullable)) {
    const left = sql.join(order.map((entry) => column(entry.field)), sql.fragment`, `);
    const right = sql.join(order.map((entry, i) => typed(entry.field, values[i])), sql.fragment`, `);
    return order[0]?.direction === 'desc' ? sql.fragment`(${left}) < (${right})` : sql.fragment`(${left}) > (${right})`;
  }
  let condition: Fragment = sql.fragment`FALSE`;
  for (let i = order.length - 1; i >= 0; i -= 1) {
    const { field, direction } = order[i] as OrderPlan;
    const value = values[i];
    const col = column(field);
    if (value === null || value === undefined) {
      condition = sql.fragment`(${col} IS NULL AND ${condition})`;
      continue;
    }
    const beyond = direction === 'asc' ? sql.fragment`${col} > ${typed(field, value)}` : sql.fragment`${col} < ${typed(field, value)}`;
    const after = field.nullable ? sql.fragment`(${beyond} OR ${col} IS NULL)` : beyond;
    condition = sql.fragment`(${after} OR (${col} = ${typed(field, value)} AND ${condition}))`;
  }
  return condition;
}

function whereSql(conditions: readonly Fragment[]): Fragment {
  return conditions.length === 0 ? sql.fragment`TRUE` : sql.join(conditions, sql.fragment` AND `);
}

/** The alias of the i-th order column's exact text in a page row (not a field name: it has a colon). */
export const cursorColumn = (i: number) => `cursor:${i}`;

/**
 * The page query: selected fields, filters, the cursor bound, and one row past the limit. Beside the
 * row come the order columns as Postgres's own text (`col::text`), because the served value is not
 * exact (instants are served with milliseconds, stored with microseconds); the next cursor is built
 * from that text and cast back to the column's type, so it names the last row exactly.
 */
export function pageSql(plan: QueryPlan, cursorValues?: CursorValues) {
  const conditions = plan.filters.map(filterSql);
  if (cursorValues) conditions.push(afterCursorSql(plan.order, cursorValues));
  const selected = plan.select.map((f) => sql.fragment`${column(f)} AS ${sql.identifier([f.name])}`);
  const keys = plan.order.map(({ field }, i) => sql.fragment`${column(field)}::text AS ${sql.identifier([cursorColumn(i)])}`);
  return sql.fragment`
    SELECT ${sql.join([...selected, ...keys], sql.fragment`, `)}
    FROM ${sql.identifier([plan.object.table])}
    WHERE ${whereSql(conditions)}
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

export function aggregateSql(plan: QueryPlan, aggregate: AggregatePlan) {
  const groups = aggregate.groupBy.map((f) => sql.fragment`${column(f)} AS ${sql.identifier([f.name])}`);
  const metrics = aggregate.metrics.map((m) => sql.fragment`${metricSql(m)} AS ${sql.identifier([m.alias])}`);
  const grouping =
    aggregate.groupBy.length === 0
      ? sql.fragment``
      : sql.fragment`GROUP BY ${sql.join(aggregate.groupBy.map(column), sql.fragment`, `)}
         ORDER BY ${orderSql(aggregate.groupBy.map((field) => ({ field, direction: 'asc' as const })))}`;
  return sql.fragment`
    SELECT ${sql.join([...groups, ...metrics], sql.fragment`, `)}
    FROM ${sql.identifier([plan.object.table])}
    WHERE ${whereSql(plan.filters.map(filterSql))}
    ${grouping}
    LIMIT ${plan.limit + 1}`;
}
