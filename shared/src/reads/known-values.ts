import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { visibleRowsSql } from '../query/index.ts';
import { columnOf, type ObjectDef } from '../sectors/index.ts';

/** At most this many values are listed per field, the most frequent first. */
export const KNOWN_VALUES_CAP = 50;

export type KnownValues = { values: string[]; capped: boolean };

const ValueRow = z.object({ value: z.string() });

/**
 * The values the cache holds for each categorical field of an object (a category, a metric, a unit, a
 * folder), most frequent first and capped, so an agent can filter by a name it has read rather than
 * group first to discover it.
 */
export async function knownValues(db: DatabasePool, object: ObjectDef): Promise<Record<string, KnownValues>> {
  const fields = object.fields.filter((fieldDef) => fieldDef.categorical);
  const lists = await Promise.all(
    fields.map(async (fieldDef) => {
      const column = sql.identifier([columnOf(fieldDef)]);
      const values = await db.anyFirst(sql.type(ValueRow)`
        SELECT ${column}::text AS value FROM ${sql.identifier([object.table])}
        WHERE ${column} IS NOT NULL AND ${visibleRowsSql(object)}
        GROUP BY ${column} ORDER BY count(*) DESC, ${column} LIMIT ${KNOWN_VALUES_CAP + 1}`);
      return [fieldDef.name, { values: values.slice(0, KNOWN_VALUES_CAP), capped: values.length > KNOWN_VALUES_CAP }] as const;
    }),
  );
  return Object.fromEntries(lists);
}
