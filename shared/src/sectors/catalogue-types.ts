import type { Sector } from './sector-names.ts';

/**
 * Wire types of catalogue fields. `uuid` is a string on the wire; `decimal` is an exact decimal string (money, quantities);
 * `timestamp` an ISO 8601 UTC instant with milliseconds; `date` a local `YYYY-MM-DD`.
 */
export type FieldType = 'string' | 'uuid' | 'integer' | 'number' | 'decimal' | 'boolean' | 'timestamp' | 'date' | 'string[]' | 'json';

export type FieldDef = {
  name: string;
  type: FieldType;
  description: string;
  unit?: string;
  /** May appear in `where`. */
  filterable: boolean;
  /** May appear in `order_by` (and as an aggregate group). */
  sortable: boolean;
  /** Whether the column may hold null; decides how keyset pages compare it. */
  nullable: boolean;
  /** The column when it differs from the field name. */
  column?: string;
  /** What the upsert path stores when a record leaves a non-nullable field out. */
  defaultValue?: unknown;
  /** A field with few distinct values (a category, a unit): get_schema lists the values the cache holds. */
  categorical?: boolean;
  /** A column the database derives from other columns (a generated column); never written by a record. */
  generated?: boolean;
  /** Not a column: worked out when read from the object's table (see the query layer); never written. */
  computed?: { kind: 'duplicate_of' | 'also_reported_by'; table: string; sameMetric?: boolean };
};

/** Whether records carry this field (false for fields the database or the read derives). */
export const isWritable = (fieldDef: FieldDef) => !fieldDef.generated && !fieldDef.computed;

/**
 * The field that lets an agent count a night or a workout once when two sources report it: the id of an
 * overlapping row of another connection that counts instead (the connection created first wins).
 */
export function duplicateOfField(what: string, table: string): FieldDef {
  return field(
    'duplicate_of',
    'string',
    `Gateway id of the same ${what} as reported by another source, which counts instead; null when this row counts. Filter duplicate_of is_null true before summing or averaging.`,
    { sortable: false, computed: { kind: 'duplicate_of', table } },
  );
}

/**
 * The rule that marks a row two sources report (documented for agents in the field's description): another
 * connection's row of the same object whose span [start_at, end_at) overlaps this one's, and for samples
 * of the same metric. The field lists those connections' ids; empty when only this source reports it.
 */
export function alsoReportedByField(what: string, table: string, sameMetric = false): FieldDef {
  const metric = sameMetric ? ' of the same metric' : '';
  return field(
    'also_reported_by',
    'string[]',
    `Connection ids (as describe_context lists them) of the other sources that report this ${what}: a row of another connection${metric} whose [start_at, end_at) overlaps this one's. Empty when this source alone reports it.`,
    { filterable: false, computed: { kind: 'also_reported_by', table, sameMetric } },
  );
}

export type ObjectDef = {
  /** `<sector>.<object>`, e.g. `finance.transaction`. */
  name: string;
  sector: Sector;
  table: string;
  description: string;
  fields: readonly FieldDef[];
  /** The traps to know before filtering (sign conventions, units, time zones). */
  notes: readonly string[];
  /** Field → what to know about it. */
  fieldDocs: Readonly<Record<string, string>>;
  /**
   * Spans a row covers, start and end field: the `overlaps` filter takes the start field. The end is
   * exclusive (an instant, or the day after the last day of an all-day event).
   */
  spans?: ReadonlyArray<{ start: string; end: string }>;
  /**
   * Rows every read leaves out because two connections deliver the same account (spec 2.1): `account`,
   * the merged-away account itself; `account_rows`, the rows whose `account_id` names one; `transactions`,
   * the rows matched one by one to a row of the first copy (design 8.3, column `merged_into`).
   */
  hidesMerged?: 'account' | 'account_rows' | 'transactions';
  /**
   * Rows may carry `possible_twin_id` (design 8.3): a result holding both rows of a pair says so in its
   * `notes`, and an aggregate gives its counts and sums without the later copy too.
   */
  possibleTwins?: boolean;
  /** Columns of the table that are bookkeeping for reads, never served (the merge marks of design 8.3). */
  internalColumns?: readonly string[];
  /** Order used when a query names none; `id` is always appended as the tiebreak. */
  defaultOrder: ReadonlyArray<{ field: string; direction: 'asc' | 'desc' }>;
};

type FieldOptions = Partial<Omit<FieldDef, 'name' | 'type' | 'description'>>;

/**
 * A field that can be filtered and sorted and may be null, unless the options say otherwise. Lists and
 * JSON cannot be sorted and are never null (an empty list instead); JSON cannot be filtered.
 */
export function field(name: string, type: FieldType, description: string, options: FieldOptions = {}): FieldDef {
  const scalar = type !== 'json' && type !== 'string[]';
  const defaultValue = scalar ? undefined : [];
  return { name, type, description, filterable: type !== 'json', sortable: scalar, nullable: scalar, defaultValue, ...options };
}

/** The columns every cached row carries (design 4.2). */
export function commonFields(): FieldDef[] {
  return [
    field('id', 'string', 'Gateway id of the record; pass it to get_record.', { nullable: false }),
    field('connection_id', 'uuid', 'The connection this record came from (see describe_context).', { nullable: false }),
    field('source', 'string', 'Provider kind that delivered the record.', { nullable: false }),
    field('source_id', 'string', "The provider's own id for the record.", { nullable: false }),
    field('synced_at', 'timestamp', 'When the gateway last stored this record (UTC).', { nullable: false }),
  ];
}
