import type { FieldDef, ObjectDef } from '../sectors/index.ts';
import type { AggregatePlan } from './query-plan.ts';

type Row = Record<string, unknown>;

/** The suffix of an aggregate output that leaves the later copy of each pair of possible twins out (design 8.3). */
export const WITHOUT_TWINS_SUFFIX = '_without_possible_twins';

const TWIN_FIELD = 'possible_twin_id';

/** The field a page must read to tell whether it holds both rows of a pair, when the object has twins. */
export function twinField(object: ObjectDef): FieldDef | undefined {
  return object.possibleTwins ? object.fields.find((field) => field.name === TWIN_FIELD) : undefined;
}

/** What a row is, for the notes: the object's name without its sector (`finance.transaction` → transaction). */
const what = (object: ObjectDef) => object.name.slice(object.sector.length + 1);

/** The `notes` entry of a page holding both rows of at least one pair: which rows, and what to do. */
export function pageTwinNotes(object: ObjectDef, rows: readonly Row[]): string[] {
  const ids = new Set(rows.map((row) => row.id));
  // Each pair once, named lower id first, whichever of its rows comes first.
  const pairs = new Set<string>();
  for (const row of rows) {
    const twin = row[TWIN_FIELD];
    if (ids.has(twin)) pairs.add([String(row.id), String(twin)].sort().join(' and '));
  }
  if (pairs.size === 0) return [];
  const noun = what(object);
  return [
    `This result holds both rows of ${pairs.size === 1 ? 'a pair' : `${pairs.size} pairs`} that may be the same ${noun} reported by two connections whose accounts await the operator's answer (possible_twin_id): ${[...pairs].join('; ')}. Count one ${noun} of each pair unless you know they differ.`,
  ];
}

/** An exact decimal difference of two decimal strings or numbers (counts come as strings, sums as decimal text). */
export function decimalMinus(a: unknown, b: unknown): string | null {
  if (a === null || a === undefined) return null;
  if (b === null || b === undefined) return String(a);
  // The whole part keeps its sign: BigInt reads "-012" as -12, so "-0.12" scaled by 100 is -12.
  const parse = (value: unknown) => String(value).split('.') as [whole: string, fraction?: string];
  const [xWhole, xFraction = ''] = parse(a);
  const [yWhole, yFraction = ''] = parse(b);
  const scale = Math.max(xFraction.length, yFraction.length);
  const difference = BigInt(xWhole + xFraction.padEnd(scale, '0')) - BigInt(yWhole + yFraction.padEnd(scale, '0'));
  const negative = difference < 0n;
  const digits = (negative ? -difference : difference).toString().padStart(scale + 1, '0');
  const sign = negative ? '-' : '';
  return scale === 0 ? `${sign}${digits}` : `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/**
 * The groups with `<metric>_without_possible_twins` beside each count and sum, and the `notes` entry, when
 * some group holds both rows of a pair; the groups unchanged and no note otherwise. `twinRows` are what the
 * later copies add per group (query-sql's possibleTwinsSql).
 */
export function withoutTwins(object: ObjectDef, aggregate: AggregatePlan, groups: readonly Row[], twinRows: readonly Row[]): { rows: Row[]; notes: string[] } {
  if (twinRows.length === 0) return { rows: [...groups], notes: [] };
  const keyOf = (row: Row) => JSON.stringify(aggregate.groupBy.map((group) => row[group.alias]));
  const byGroup = new Map(twinRows.map((row) => [keyOf(row), row]));
  const metrics = aggregate.metrics.filter((metric) => metric.fn === 'count' || metric.fn === 'sum');
  const rows = groups.map((group) => {
    const twins = byGroup.get(keyOf(group));
    const added: Row = {};
    for (const metric of metrics) {
      const value = group[metric.alias] ?? null;
      const without = twins ? decimalMinus(value, twins[metric.alias]) : value;
      // A count is served as a number, a sum as exact decimal text: the total without twins keeps its form.
      added[`${metric.alias}${WITHOUT_TWINS_SUFFIX}`] = typeof value === 'number' ? Number(without) : without;
    }
    return { ...group, ...added };
  });
  const counted = metrics.map((metric) => `${metric.alias}${WITHOUT_TWINS_SUFFIX}`).join(', ');
  const noun = what(object);
  return {
    rows,
    notes: [
      `Some groups hold both rows of a pair that may be the same ${noun} reported by two connections whose accounts await the operator's answer (possible_twin_id). ${counted || 'Counts and sums'} give each group's total with the later connection's copy of each pair left out; use ${metrics.length > 0 ? 'them' : 'a count or sum'} unless you know the two differ.`,
    ],
  };
}
