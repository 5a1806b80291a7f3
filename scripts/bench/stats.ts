/** Percentiles and a side-by-side table for the benchmarks; they print numbers, they assert nothing. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

export type Timing = { p50: number; p99: number; mean: number };

export function summarize(samples: readonly number[]): Timing {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean: sorted.reduce((a, b) => a + b, 0) / sorted.length };
}

/** Times `fn` once, in milliseconds. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export function printTable(title: string, rows: ReadonlyArray<Record<string, string | number>>): void {
  console.log(`\n${title}`);
  console.table(rows);
}

export const ms = (value: number) => Number(value.toFixed(2));
