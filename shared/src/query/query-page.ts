import { fitRows, PAGE_BUDGET_CHARS, PAGE_CUT_NOTICE, ROW_CUT_NOTICE } from './query-budget.ts';
import type { QueryResult } from './query-input.ts';
import { rememberText } from './pretty-text.ts';

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
  const whole = await wholePage(object, fetched, items, project, cursorAfter, extra);
  if (whole) return whole;
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
    const text = JSON.stringify(result, null, 2);
    if (page.rows.length <= 1 || text.length <= PAGE_BUDGET_CHARS) return rememberText(result, text);
    page.rows.pop();
    page.kept.pop();
  }
}

/**
 * The common case first: every row of the page, rendered once; undefined when that text is over the
 * budget (then rows are measured one by one). The rendered text is the one the tool sends.
 */
async function wholePage(
  object: string,
  fetched: readonly Row[],
  items: readonly Row[],
  project: (row: Row) => Row,
  cursorAfter: (last: Row) => Promise<string>,
  extra: Partial<QueryResult>,
): Promise<QueryResult | undefined> {
  const rows = items.map(project);
  const result: QueryResult = { object, rows, row_count: rows.length, has_more: fetched.length > items.length, ...extra };
  const last = items.at(-1);
  if (result.has_more && last) result.next_cursor = await cursorAfter(last);
  const text = JSON.stringify(result, null, 2);
  if (text.length > PAGE_BUDGET_CHARS) return undefined;
  return rememberText(result, text);
}
