/**
 * CSV as spreadsheets read it, shared by The ledger's Export CSV (in the page) and a sector's export (in
 * the Console process). A text value a spreadsheet would run as a formula — first character `=`, `+`,
 * `-`, `@`, tab or carriage return — is written with an apostrophe in front (spec 4.5). A JSON number is a
 * number, not text a spreadsheet evaluates, and is written as it is (a negative amount stays a number).
 */
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return FORMULA_START.test(text) ? `'${text}` : text;
}

function quoted(text: string): string {
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A header line and one line per row, CRLF-separated (RFC 4180); columns in the order of `headers`. */
export function toCsv(headers: readonly string[], rows: ReadonlyArray<Record<string, unknown>>): string {
  const lines = [headers.map((header) => quoted(csvText(header))).join(',')];
  for (const row of rows) lines.push(headers.map((header) => quoted(csvText(row[header]))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/** Every key of the rows, in order of first appearance. */
export function columnsOf(rows: ReadonlyArray<Record<string, unknown>>, first: readonly string[] = []): string[] {
  const columns = new Set(first);
  for (const row of rows) for (const key of Object.keys(row)) columns.add(key);
  return [...columns];
}
