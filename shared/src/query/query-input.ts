import { z } from 'zod';
import { PAGE_BUDGET_CHARS } from './query-budget.ts';
import { RELATIVE_DATES, type DateRange } from './query-dates.ts';

export const FILTER_OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'contains', 'starts_with', 'is_null', 'between', 'overlaps'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

export const METRIC_FNS = ['count', 'sum', 'avg', 'min', 'max'] as const;
export type MetricFn = (typeof METRIC_FNS)[number];

/** Time buckets a date or timestamp can be grouped by, in the person's time zone; weeks start on Monday. */
export const BUCKETS = ['day', 'week', 'month'] as const;
export type Bucket = (typeof BUCKETS)[number];

/** How relative dates are told to agents, in the query tool and in get_schema. */
export const RELATIVE_DATES_DOC =
  `Relative dates: on a date or timestamp field, eq, gte, gt, lt, lte and overlaps take ${RELATIVE_DATES.join(', ')} ` +
  "(e.g. last_30_days), resolved in the person's time zone (describe_context time_zone); weeks start on Monday; last_N_days and next_N_days include today. " +
  'eq means within the range; the resolved range comes back in resolved_dates.';

/** Longest string value a filter takes; longer ones are refused rather than sent to the database. */
export const MAX_STRING_VALUE = 1_000;
export const MAX_LIST_VALUES = 500;
export const MAX_LIMIT = 200;
export const DEFAULT_LIMIT = 50;
/** At most this many groups come back from an aggregate. */
export const MAX_GROUPS = MAX_LIMIT;

const Scalar = z.union([z.string().max(MAX_STRING_VALUE, `strings are at most ${MAX_STRING_VALUE} characters`), z.number(), z.boolean(), z.null()]);

const FieldName = z.string().min(1).max(128);

export const FilterSchema = z
  .object({
    field: FieldName.describe('A filterable field of the object (see get_schema).'),
    op: z
      .enum(FILTER_OPS)
      .describe(
        'eq, ne, lt, lte, gt, gte: compare with value. in, not_in: value is a list. between: value is [low, high], both included. ' +
          'contains: substring for text, ignoring case and accents (Muller finds Müller); one whole element for lists. starts_with: prefix, ignoring case and accents. ' +
          'is_null: value true (missing) or false (present). ne and not_in also match missing values. ' +
          'overlaps: on the start field of a span (start_at of an event, a sleep or a workout; start_date of an all-day event), rows whose span overlaps value ([low, high] or a relative date).',
      ),
    value: z
      .union([Scalar, z.array(Scalar).max(MAX_LIST_VALUES, `lists hold at most ${MAX_LIST_VALUES} values`)])
      .optional()
      .describe(`Dates as YYYY-MM-DD, instants as ISO 8601 (no offset means UTC), money as a decimal string or number. ${RELATIVE_DATES_DOC}`),
  })
  .strict();
export type Filter = z.infer<typeof FilterSchema>;

export const OrderSchema = z
  .object({
    field: FieldName.describe('A sortable field of the object; with aggregate, a group_by output or a metric name such as sum_amount or count.'),
    direction: z.enum(['asc', 'desc']).default('asc').describe('asc or desc; missing values sort last either way.'),
  })
  .strict();

export const MetricSchema = z
  .object({
    fn: z.enum(METRIC_FNS).describe('count, sum, avg, min or max.'),
    field: FieldName.optional().describe('The field to aggregate; count without a field counts rows.'),
  })
  .strict();

export const GroupBySchema = z.union([
  FieldName,
  z
    .object({
      field: FieldName.describe('A date or timestamp field.'),
      bucket: z.enum(BUCKETS).describe("day, week (starting Monday) or month, in the person's time zone."),
    })
    .strict(),
]);

export const AggregateSchema = z
  .object({
    group_by: z
      .array(GroupBySchema)
      .max(5)
      .optional()
      .describe('Fields to group by, or {field, bucket} to group a date or timestamp by day, week or month (output named <field>_<bucket>, the first local day of the bucket); omit for one total row.'),
    metrics: z.array(MetricSchema).min(1).max(10).describe('What to compute per group; named fn_field in the rows (count for a bare count).'),
  })
  .strict();

export const QueryInputSchema = z
  .object({
    object: z.string().min(1).max(128).describe('The object to read, e.g. finance.transaction. One object of one sector per query.'),
    where: z.array(FilterSchema).max(20).optional().describe('Filters, all of which must hold.'),
    order_by: z
      .array(OrderSchema)
      .max(5)
      .optional()
      .describe("Sort order; defaults to the object's natural order. With aggregate, order groups by a metric (e.g. sum_amount asc) and set limit for a top N."),
    select: z
      .array(FieldName)
      .min(1)
      .max(100)
      .optional()
      .describe(`Fields to return; id is always included. Default: every field. Pages also end at ${PAGE_BUDGET_CHARS} characters, so fewer fields means more rows per page.`),
    limit: z
      .number()
      .int()
      .min(1)
      .optional()
      .transform((value) => Math.min(value ?? DEFAULT_LIMIT, MAX_LIMIT))
      .describe(`Rows per page, 1 to ${MAX_LIMIT} (a larger value is lowered to ${MAX_LIMIT} and the result says so in limit_notice); default ${DEFAULT_LIMIT}. A page may end sooner at ${PAGE_BUDGET_CHARS} characters (cut_for_size: true).`),
    cursor: z
      .string()
      .max(4_096)
      .optional()
      .describe('next_cursor from the previous page of the same query, unchanged. has_more: true means there are more pages.'),
    aggregate: AggregateSchema.optional().describe('Group and compute metrics instead of returning rows. Groups page like rows, with next_cursor.'),
  })
  .strict();
export type QueryInput = z.input<typeof QueryInputSchema>;
export type ParsedQueryInput = z.output<typeof QueryInputSchema>;

export type QueryResult = {
  object: string;
  rows: Array<Record<string, unknown>>;
  row_count: number;
  has_more: boolean;
  next_cursor?: string;
  /** Set when the page ended before `limit` because of the size budget. */
  cut_for_size?: true;
  /** Rows too large for a page on their own, and which of their fields were cut. */
  fields_cut?: Array<{ id: unknown; fields: string[] }>;
  /** What a cut page or a cut row means and how to get the rest. */
  notice?: string;
  /** Each relative date of `where`, with the local days it was resolved to. */
  resolved_dates?: Array<DateRange & { where: string; field: string }>;
  /** Set when the limit asked for was above MAX_LIMIT: the limit served instead, and a sentence saying so. */
  limit_lowered_to?: number;
  limit_notice?: string;
  /** What to know about these rows before counting them: both rows of a pair of possible twins (design 8.3). */
  notes?: string[];
};

/** A limit above the maximum is lowered, never refused, and the page says so (issue 34). */
export function limitLowered(input: unknown): Pick<QueryResult, 'limit_lowered_to' | 'limit_notice'> {
  const asked = (input as { limit?: unknown } | null)?.limit;
  if (typeof asked !== 'number' || !Number.isInteger(asked) || asked <= MAX_LIMIT) return {};
  return {
    limit_lowered_to: MAX_LIMIT,
    limit_notice: `limit ${asked} is above the maximum of ${MAX_LIMIT}, so it was lowered to ${MAX_LIMIT}; has_more: true and next_cursor give the rest.`,
  };
}
