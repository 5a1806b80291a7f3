import { sql, type FragmentSqlToken } from 'slonik';
import type { ObjectDef } from '../sectors/index.ts';
import { builtOncePer } from './built-once.ts';

/**
 * The merged-away account ids as one array, worked out once per query (an InitPlan): a per-row anti-join
 * with the view doubled a grouped aggregate over a million transactions even with no pair merged. The
 * function keeps the view's plan across queries (migration 16000); the cast makes `<> ALL` read the
 * subquery's one value as the array, not as a set of rows.
 */
const MERGED_IDS = sql.fragment`(SELECT finance_merged_account_ids())::text[]`;

/**
 * The condition every read of an object adds to its own (the base filter): rows of an account merged
 * into another connection's copy (spec 2.1; the view `finance_merged_accounts`) are left out, so a
 * merged account appears once and none of its transactions counts twice; of its transactions only those
 * the first copy also has are left out. TRUE for other objects.
 */
export const visibleRowsSql = builtOncePer((object: ObjectDef): FragmentSqlToken => {
  const self = (column: string) => sql.identifier([object.table, column]);
  switch (object.hidesMerged) {
    case 'account':
      return sql.fragment`${self('id')} <> ALL (${MERGED_IDS})`;
    case 'account_rows':
      return sql.fragment`(${self('account_id')} IS NULL OR ${self('account_id')} <> ALL (${MERGED_IDS}))`;
    case 'transactions':
      // Matched one by one (design 8.3): only a row that is another copy's transaction is left out.
      return sql.fragment`${self('merged_into')} IS NULL`;
    default:
      return sql.fragment`TRUE`;
  }
});
