import type { Writable } from 'node:stream';

/** Where a command writes: `out` for results (JSON with --json), `err` for messages to the person. */
export type Io = { out: Writable; err: Writable; json: boolean };

export function printJson(io: Io, value: unknown): void {
  io.out.write(`${JSON.stringify(value, null, 2)}\n`);
}

const cell = (value: unknown): string => (value === null || value === undefined ? '-' : Array.isArray(value) ? value.join(',') : typeof value === 'object' ? JSON.stringify(value) : String(value));

/** Rows as aligned columns, or as JSON with --json. */
export function printTable(io: Io, rows: ReadonlyArray<Record<string, unknown>>, columns: readonly string[]): void {
  if (io.json) return printJson(io, rows);
  if (rows.length === 0) {
    io.out.write('(none)\n');
    return;
  }
  const cells = rows.map((row) => columns.map((column) => cell(row[column])));
  const widths = columns.map((column, index) => Math.max(column.length, ...cells.map((line) => line[index]?.length ?? 0)));
  const line = (values: string[]) => values.map((value, index) => value.padEnd(widths[index] ?? 0)).join('  ').trimEnd();
  io.out.write(`${[line([...columns]), ...cells.map(line)].join('\n')}\n`);
}

/** One object, as `key  value` lines or as JSON. */
export function printRecord(io: Io, record: Record<string, unknown>): void {
  if (io.json) return printJson(io, record);
  const width = Math.max(...Object.keys(record).map((key) => key.length));
  io.out.write(`${Object.entries(record).map(([key, value]) => `${key.padEnd(width)}  ${cell(value)}`).join('\n')}\n`);
}
