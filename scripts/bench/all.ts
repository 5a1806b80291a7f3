import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * npm run bench: every benchmark, one after another, each printing its side-by-side table.
 * npm run bench:smoke (`--smoke`): the same in the smoke size (BENCH_SMOKE=1: a few hundred calls, seconds),
 * for CI; it asserts only that each ran to the end and printed its table, never a number.
 */
const root = path.resolve(import.meta.dirname, '../..');
const smoke = process.argv.includes('--smoke');
const BENCHMARKS = ['query', 'audit', 'audit-verify', 'mcp', 'tool-path', 'activity'].filter((name) => existsSync(path.join(root, 'scripts/bench', `${name}.ts`)));
/** Sizes of benchmarks that do not read BENCH_SMOKE themselves. */
const SMOKE_ENV: Record<string, Record<string, string>> = { 'audit-verify': { BENCH_VERIFY_ROWS: '20000' } };

/** A table as console.table or a markdown table prints it. */
const TABLE_LINE = /^\s*(┌|│|\|)/m;

function run(name: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const env = smoke ? { ...process.env, BENCH_SMOKE: '1', ...SMOKE_ENV[name] } : process.env;
    const child = spawn(process.execPath, [path.join(root, 'scripts/bench', `${name}.ts`)], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      process.stdout.write(chunk);
    });
    child.once('close', (code) => resolve({ code, output }));
  });
}

const failures: string[] = [];
for (const name of BENCHMARKS) {
  console.log(`\n=== bench:${name}${smoke ? ' (smoke size)' : ''}`);
  const started = performance.now();
  const { code, output } = await run(name);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (code !== 0) failures.push(`bench:${name} exited with ${code} after ${seconds} s`);
  else if (!TABLE_LINE.test(output)) failures.push(`bench:${name} printed no table`);
  else console.log(`=== bench:${name} ran to the end in ${seconds} s`);
}
if (failures.length > 0) console.error(`\n${failures.join('\n')}`);
process.exit(failures.length > 0 ? 1 : 0);
