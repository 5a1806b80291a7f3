import { sql, type FragmentSqlToken } from 'slonik';
import type { ObjectDef } from '../sectors/index.ts';

/**
 * The condition every read of an object adds to its own (the base filter): rows of an account merged
 * into another connection's copy (spec 2.1; the view `finance_merged_accounts`) are left out, so a
 * merged account appears once and none of its transactions counts twice. TRUE for other objects.
 */
export function visibleRowsSql(object: ObjectDef): FragmentSqlToken {
  const self = (column: string) => sql.identifier([object.table, column]);
  switch (object.hidesMerged) {
    case 'account':
      return sql.fragment`NOT EXISTS (SELECT 1 FROM finance_merged_accounts merged WHERE merged.id = ${self('id')})`;
    case 'account_rows':
      return sql.fragment`(${self('account_id')} IS NULL OR NOT EXISTS (SELECT 1 FROM finance_merged_accounts merged WHERE merged.id = ${self('account_id')}))`;
    default:
      return sql.fragment`TRUE`;
  }
}
