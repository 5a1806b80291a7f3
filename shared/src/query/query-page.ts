import { fitRows, PAGE_BUDGET_CHARS, PAGE_CUT_NOTICE, ROW_CUT_NOTICE } from './query-budget.ts';
import type { QueryResult } from './query-input.ts';

type Row = Record<string, unknown>;

/**
 * One page of a read: at most `limit` rows and at most the character budget of the tool's text. Rows
 * come with one row past the limit when there is more; the cursor is built from the last row served,
 * so a page cut for size continues exactly where it stopped.
 */
export async function sizedPage(
  object: string,
  fetched: readonly Row[],
  limit: number,
  project: (row: Row) => Row,
  cursorAfter: (last: Row) => Promise<string>,
  extra: Partial<QueryResult> = {},
): Promise<QueryResult> {
  const items = fetched.slice(0, limit);
  const page = fitRows(items, project);
  for (;;) {
    const hasMore = fetched.length > limit || page.kept.length < items.length;
    const result: QueryResult = { object, rows: page.rows, row_count: page.rows.length, has_more: hasMore, ...extra };
    const last = page.kept.at(-1);
    if (hasMore && last) result.next_cursor = await cursorAfter(last);
    const notices = [page.kept.length < items.length ? PAGE_CUT_NOTICE : undefined, page.fieldsCut.length > 0 ? ROW_CUT_NOTICE : undefined].filter(Boolean);
    if (page.kept.length < items.length) result.cut_for_size = true;
    if (page.fieldsCut.length > 0) result.fields_cut = page.fieldsCut;
    if (notices.length > 0) result.notice = notices.join('; ');
    // The reserve covers the envelope in practice; this makes the bound exact whatever it holds.
    if (page.rows.length <= 1 || JSON.stringify(result, null, 2).length <= PAGE_BUDGET_CHARS) return result;
    page.rows.pop();
    page.kept.pop();
  }
}
