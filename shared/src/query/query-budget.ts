/**
 * The size cap of one answer. A page ends at `limit` rows or at this many characters of the tool's text
 * (the result as JSON indented two spaces, as the gateway sends it), whichever comes first. Hosted
 * clients cap a tool result at about 25,000 tokens; JSON of ids, instants and names runs at 2.5 to 4
 * characters a token, so 40,000 characters stays under 16,000 tokens even at the worst ratio.
 */
export const PAGE_BUDGET_CHARS = 40_000;

/** What a page cut for size says, so the agent knows the page is short on purpose and how to get more rows. */
export const PAGE_CUT_NOTICE =
  `this page was cut at ${PAGE_BUDGET_CHARS} characters before reaching limit; pass next_cursor for the next page, or name fewer fields with select to get more rows per page`;

/** What a row too large for a page on its own says about the fields that were shortened. */
export const ROW_CUT_NOTICE = `a row larger than ${PAGE_BUDGET_CHARS} characters had its longest fields cut (listed in fields_cut); select fewer fields to read them whole`;

/** The mark at the end of a cut value; the number is the length of the whole value as JSON. */
export const cutMark = (fullChars: number) => `…[cut: ${fullChars} characters in all]`;

/** Room kept for the envelope (object, counts, cursor, notices, echoed dates) around the rows. */
const ENVELOPE_RESERVE = 2_000;
/** What a cut field keeps at least, so a cut value still shows what it was. */
const KEEP_AT_LEAST = 200;

/** Characters a value adds as one element of a list nested `depth` levels deep in the pretty JSON. */
export function prettySize(value: unknown, depth = 2): number {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  let lines = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines += 1;
  // Every line is indented by two spaces per level, and the element is followed by ",\n".
  return text.length + lines * depth * 2 + 2;
}

/** The row's fields cut, longest first, until the row fits `allowance`; the names of the cut fields. */
export function cutRow(row: Record<string, unknown>, allowance: number): { row: Record<string, unknown>; cut: string[] } {
  const result = { ...row };
  const kept = new Map<string, number>();
  for (let round = 0; round < 100; round += 1) {
    const excess = prettySize(result) - allowance;
    if (excess <= 0) break;
    const longest = Object.entries(result)
      .filter(([name]) => name !== 'id')
      .map(([name, value]) => ({ name, chars: (JSON.stringify(value) ?? '').length }))
      .sort((a, b) => b.chars - a.chars)[0];
    if (!longest || longest.chars <= 2) break;
    const original = row[longest.name];
    const whole = typeof original === 'string' ? original : (JSON.stringify(original) ?? '');
    const mark = cutMark(whole.length);
    const before = kept.get(longest.name) ?? whole.length;
    // Shrink by the excess at once (escapes can make the JSON longer than the text, hence the loop).
    const needed = Math.max(0, Math.min(before - 1, before - excess - mark.length));
    const prefix = before > KEEP_AT_LEAST ? Math.max(needed, KEEP_AT_LEAST) : needed;
    kept.set(longest.name, prefix);
    result[longest.name] = `${whole.slice(0, prefix)}${mark}`;
  }
  return { row: result, cut: [...kept.keys()] };
}

export type FittedPage<T> = {
  /** The rows that fit, some perhaps with cut fields. */
  rows: Array<Record<string, unknown>>;
  /** The source item of each row kept (to build the next cursor from the last one). */
  kept: T[];
  /** True when rows of the page were left out for size (not for `limit`). */
  cutForSize: boolean;
  /** Rows whose fields were cut, by id (or by position when a row has no id). */
  fieldsCut: Array<{ id: unknown; fields: string[] }>;
};

/**
 * Takes rows in order while they fit the budget. A first row larger than the budget on its own is kept
 * with its longest fields cut, so a page always holds at least one row and paging always advances.
 */
export function fitRows<T>(items: readonly T[], rowOf: (item: T) => Record<string, unknown>, budget = PAGE_BUDGET_CHARS): FittedPage<T> {
  const room = budget - ENVELOPE_RESERVE;
  const page: FittedPage<T> = { rows: [], kept: [], cutForSize: false, fieldsCut: [] };
  let used = 0;
  for (const [index, item] of items.entries()) {
    const row = rowOf(item);
    const size = prettySize(row);
    if (used + size <= room) {
      page.rows.push(row);
      page.kept.push(item);
      used += size;
      continue;
    }
    if (page.rows.length === 0) {
      const { row: shortened, cut } = cutRow(row, room);
      page.rows.push(shortened);
      page.kept.push(item);
      page.fieldsCut.push({ id: row.id ?? index, fields: cut });
    }
    break;
  }
  page.cutForSize = page.kept.length < items.length;
  return page;
}
