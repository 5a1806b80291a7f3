import { sql, type FragmentSqlToken } from 'slonik';
import type { FieldDef } from '../sectors/index.ts';

/**
 * The SQL of a field that is not a column. `duplicate_of`: the row of another connection whose span
 * overlaps this one (the same night or workout reported twice), taken from the connection created first;
 * null on the row that counts. The outer row is named by its table, the other one `o`.
 */
export function computedSql(computed: NonNullable<FieldDef['computed']>): FragmentSqlToken {
  const self = (column: string) => sql.identifier([computed.table, column]);
  if (computed.kind === 'also_reported_by') {
    // The other connections with a row overlapping this one (of the same metric for samples), by id.
    const sameMetric = computed.sameMetric ? sql.fragment`AND o.metric = ${self('metric')}` : sql.fragment``;
    return sql.fragment`ARRAY(
      SELECT DISTINCT o.connection_id::text FROM ${sql.identifier([computed.table])} AS o
      WHERE o.connection_id <> ${self('connection_id')} ${sameMetric}
        AND o.start_at < ${self('end_at')} AND o.end_at > ${self('start_at')}
      ORDER BY 1)`;
  }
  return sql.fragment`(
    SELECT o.id FROM ${sql.identifier([computed.table])} AS o
    JOIN connections AS oc ON oc.id = o.connection_id
    JOIN connections AS mine ON mine.id = ${self('connection_id')}
    WHERE o.connection_id <> ${self('connection_id')}
      AND o.start_at < ${self('end_at')} AND o.end_at > ${self('start_at')}
      AND (oc.created_at, oc.id) < (mine.created_at, mine.id)
    ORDER BY oc.created_at, oc.id, o.start_at, o.id
    LIMIT 1)`;
}
