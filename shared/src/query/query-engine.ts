import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { loadOrCreateSecret, type DirectPool } from '../db/index.ts';
import type { ObjectDef } from '../sectors/index.ts';
import { createCursorCodec, CURSOR_SHAPE_MISMATCH, queryShape, type CursorCodec } from './query-cursor.ts';
import { describeZodError, isDataException, QueryError } from './query-errors.ts';
import { limitLowered, QueryInputSchema, type ParsedQueryInput, type QueryResult } from './query-input.ts';
import { EXPECTED_TEXT, planQuery, type QueryPlan } from './query-plan.ts';
import { isStorableText } from './query-values.ts';
import { looksRelative } from './query-dates.ts';
import { aggregateSql, cursorColumn, pageSql, possibleTwinsSql, subtractableMetrics } from './query-sql.ts';
import { pageTwinNotes, twinField, withoutTwins } from './query-twins.ts';
import { sizedPage } from './query-page.ts';
import { computedSql } from './query-computed.ts';
import { visibleRowsSql } from './query-visible.ts';
import { statementName } from './statement-names.ts';

/** Name of the `settings` row holding the cursor signing key. */
export const CURSOR_KEY_SETTING = 'query_cursor_key';

/** What a query needs to know about the person: the clock and, only when asked, the time zone. */
export type QueryContext = {
  now?: () => Date;
  /** The person's IANA time zone; read only by queries with relative dates or local buckets. Default UTC. */
  timeZone?: () => Promise<string>;
};

export type QueryEngine = {
  /** Validates `input` for `object` (already resolved from the catalogue and grant-checked) and runs it. */
  query(object: ObjectDef, input: unknown, context?: QueryContext): Promise<QueryResult>;
  /** One record by gateway id, every field; null when there is none. */
  getRecord(object: ObjectDef, id: string): Promise<Record<string, unknown> | null>;
};

/**
 * A data exception that got past validation, told as a refusal naming the inputs whose values reached
 * the database (or, with none, the object read), never as a failure to retry.
 */
function refusedValue(plan: QueryPlan, withCursor: boolean): QueryError {
  const inputs = plan.filters.map((filter, i) => `where.${i} (${filter.field.name})`);
  if (withCursor) inputs.push('cursor');
  return inputs.length > 0
    ? new QueryError(`${inputs.join(', ')}: the database cannot use a value given here; check it against the field's type in get_schema`)
    : new QueryError(`object: a value stored in ${plan.object.name} cannot be read as its field's type; narrow the query with where or select`);
}

/** Whether a query needs the person's time zone: a relative date, or a bucket of instants or dates. */
function usesLocalTime(input: ParsedQueryInput): boolean {
  return (input.where ?? []).some((filter) => looksRelative(filter.value)) || (input.aggregate?.group_by ?? []).some((group) => typeof group !== 'string');
}

/** The served fields of a row, in order, a missing one as null (the SQL adds cursor columns past them). */
function projector(names: readonly string[]) {
  return (row: Record<string, unknown>) => {
    const served: Record<string, unknown> = {};
    for (const name of names) served[name] = row[name] ?? null;
    return served;
  };
}

export function createQueryEngine({ db, direct }: { db: DatabasePool; direct: DirectPool }): QueryEngine {
  let codec: Promise<CursorCodec> | undefined;
  const cursors = () => (codec ??= loadOrCreateSecret(db, CURSOR_KEY_SETTING).then(createCursorCodec));
  // Pages, aggregates and records go straight through pg (db/direct-reads.ts): the hottest path there is.
  const rowsOf = (plan: QueryPlan, query: FragmentSqlToken, withCursor = false) =>
    direct.read({ sql: query.sql, values: query.values, name: statementName(query.sql) }).catch((error: unknown) => {
      throw isDataException(error) ? refusedValue(plan, withCursor) : error;
    });

  return {
    async query(object, input, context = {}) {
      const parsed = QueryInputSchema.safeParse(input);
      if (!parsed.success) throw new QueryError(describeZodError(parsed.error));
      if (parsed.data.object !== object.name) throw new QueryError(`object: expected ${object.name}`);
      const zone = usesLocalTime(parsed.data) && context.timeZone ? await context.timeZone() : 'UTC';
      const plan = planQuery(object, parsed.data, { zone, now: (context.now ?? (() => new Date()))() });
      const resolved = plan.filters.flatMap((filter, i) => (filter.resolved ? [{ where: `where.${i}`, field: filter.field.name, ...filter.resolved }] : []));
      const extra: Partial<QueryResult> = { ...(resolved.length > 0 ? { resolved_dates: resolved } : {}), ...limitLowered(input) };

      // Hashed only when a cursor comes in or goes out.
      let shape: string | undefined;
      const shapeOf = () => (shape ??= queryShape(plan));
      const cursorValues = parsed.data.cursor ? (await cursors()).decode(shapeOf(), parsed.data.cursor) : undefined;
      if (cursorValues && cursorValues.length !== plan.order.length) throw new QueryError(CURSOR_SHAPE_MISMATCH);
      const nextCursor = async (last: Record<string, unknown>) =>
        (await cursors()).encode(shapeOf(), plan.order.map((_, i) => (last[cursorColumn(i)] as string | null) ?? null));

      if (plan.aggregate) {
        const aggregate = plan.aggregate;
        // Beside the groups, in parallel: what the later copies of possible twins add (design 8.3).
        const twinsAsked = object.possibleTwins && subtractableMetrics(aggregate).length > 0;
        const [groups, twinRows] = await Promise.all([
          rowsOf(plan, aggregateSql(plan, aggregate, cursorValues), cursorValues !== undefined),
          twinsAsked ? rowsOf(plan, possibleTwinsSql(plan, aggregate)) : Promise.resolve([]),
        ]);
        const outputs = [...aggregate.groupBy.map((group) => group.alias), ...aggregate.metrics.map((metric) => metric.alias)];
        if (twinRows.length === 0) return sizedPage(object.name, groups, plan.limit, projector(outputs), nextCursor, extra);
        const twins = withoutTwins(object, aggregate, groups, twinRows);
        const withTwins = [...outputs, ...Object.keys(twins.rows[0] ?? {}).filter((name) => name.endsWith('_without_possible_twins'))];
        return sizedPage(object.name, twins.rows, plan.limit, projector(withTwins), nextCursor, { ...extra, ...(twins.notes.length > 0 ? { notes: twins.notes } : {}) });
      }

      // A page of an object with twins reads possible_twin_id even when not selected, to say when it holds both rows of a pair.
      const twin = twinField(object);
      const served = plan.select.map((f) => f.name);
      const read = twin && !plan.select.includes(twin) ? { ...plan, select: [...plan.select, twin] } : plan;
      const rows = await rowsOf(read, pageSql(read, cursorValues), cursorValues !== undefined);
      const notes = twin ? pageTwinNotes(object, rows.slice(0, plan.limit)) : [];
      return sizedPage(object.name, rows, plan.limit, projector(served), nextCursor, notes.length > 0 ? { ...extra, notes } : extra);
    },

    async getRecord(object, id) {
      if (!isStorableText(id)) throw new QueryError(`id: expected ${EXPECTED_TEXT}`);
      if (id.length === 0 || id.length > 512) return null;
      const columns = object.fields.map((f) => sql.fragment`${f.computed ? computedSql(f.computed) : sql.identifier([f.column ?? f.name])} AS ${sql.identifier([f.name])}`);
      const query = sql.fragment`
        SELECT ${sql.join(columns, sql.fragment`, `)} FROM ${sql.identifier([object.table])} WHERE id = ${id} AND ${visibleRowsSql(object)}`;
      const [row] = await direct.read({ sql: query.sql, values: query.values });
      return row ?? null;
    },
  };
}
