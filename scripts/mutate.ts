import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { Stryker } from '@stryker-mutator/core';
import { SMOKE, shards } from './mutate-shards.ts';

/**
 * npm run mutate: every shard of stryker.config.mjs, each in a process of its own, two at a time (the machine
 * has two cores; each shard runs one test runner) and the longest first, then one table of the modules'
 * scores and each shard's wall time; exits 1 when a module scores under 80% or a shard fails or kills nothing
 * (issue 43). A shard's output lines are prefixed with its name.
 * npm run mutate -- <shard>…: only those shards. `--force`: test every mutant again, ignoring the shards'
 * incremental results. npm run mutate:smoke (`--smoke`): the small SMOKE shard from scratch with its unit tests only, for CI; it asserts
 * only that it ran to the end and killed a mutant (so the tests do reach the sandbox's mutated code).
 */
const root = path.resolve(import.meta.dirname, '..');
const reportDir = path.join(root, 'reports/mutation');
const MIN_SCORE = 80;
/** Shards run at once: one test runner each, on a 2-core machine. */
const LANES = 2;

type Counts = { killed: number; survived: number; noCoverage: number; timeout: number; errors: number; static: number };
type ShardSummary = { modules: Record<string, Counts> };

const args = process.argv.slice(2);
const worker = args.indexOf('--shard-worker');
if (worker >= 0) {
  await runShard(args[worker + 1] ?? '', { smoke: args.includes('--smoke'), force: args.includes('--force') });
} else {
  process.exit(await main());
}

/** Runs one shard with Stryker's API and writes its per-module counts for the parent. */
async function runShard(name: string, { smoke, force }: { smoke: boolean; force: boolean }): Promise<void> {
  const shard = shards[name];
  if (!shard) throw new Error(`no shard ${name}`);
  const id = smoke ? `smoke-${name}` : name;
  const results = await new Stryker({
    configFile: path.join(root, 'stryker.config.mjs'),
    mutate: [...shard.mutate, '!**/*.test.ts'],
    testFiles: smoke ? SMOKE.testFiles : shard.testFiles,
    incremental: !smoke,
    force,
    incrementalFile: `reports/mutation/${name}.incremental.json`,
    tempDirName: `.stryker-tmp/${id}`,
    reporters: smoke ? ['progress-append-only', 'clear-text'] : undefined,
    htmlReporter: { fileName: `reports/mutation/${id}.html` },
    jsonReporter: { fileName: `reports/mutation/${id}.json` },
  }).runMutationTest();
  const modules: Record<string, Counts> = {};
  for (const mutant of results) {
    const counts = (modules[path.relative(root, path.resolve(root, mutant.fileName))] ??= { killed: 0, survived: 0, noCoverage: 0, timeout: 0, errors: 0, static: 0 });
    if (mutant.status === 'Killed') counts.killed++;
    else if (mutant.status === 'Survived') counts.survived++;
    else if (mutant.status === 'NoCoverage') counts.noCoverage++;
    else if (mutant.status === 'Timeout') counts.timeout++;
    else if (mutant.status === 'CompileError' || mutant.status === 'RuntimeError') counts.errors++;
    else if (mutant.status === 'Ignored' && mutant.static) counts.static++;
  }
  writeFileSync(summaryFile(id), JSON.stringify({ modules } satisfies ShardSummary));
}

function summaryFile(id: string): string {
  return path.join(reportDir, `${id}.summary.json`);
}

/** Runs one shard's process, its output prefixed with the shard's name; resolves with its exit code. */
function runWorker(name: string, flags: string[]): Promise<number | null> {
  return new Promise((resolve) => {
    const shard = shards[name];
    const env = { ...process.env, ...(shard?.reuseDatabases ? { PCG_MUTATE_REUSE_DATABASES: '1' } : {}), ...(shard?.isolated ? { PCG_MUTATE_ISOLATE: '1' } : {}) };
    const child = spawn(process.execPath, [import.meta.filename, '--shard-worker', name, ...flags], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env });
    for (const [stream, out] of [[child.stdout, process.stdout], [child.stderr, process.stderr]] as const) {
      createInterface({ input: stream }).on('line', (line) => out.write(`[${name}] ${line}\n`));
    }
    child.once('close', resolve);
  });
}

/**
 * How long a shard is expected to take, to start the longest first: the number of mutants its incremental
 * file holds (a shard without one has never run, may be any size, and goes first).
 */
function expectedSize(name: string): number {
  const file = path.join(reportDir, `${name}.incremental.json`);
  if (!existsSync(file)) return Number.POSITIVE_INFINITY;
  const report = JSON.parse(readFileSync(file, 'utf8')) as { files: Record<string, { mutants: unknown[] }> };
  return Object.values(report.files).reduce((sum, entry) => sum + entry.mutants.length, 0);
}

/** Stryker's mutation score: detected mutants over all valid ones (errors and ignored static ones do not count). */
function score(counts: Counts): number | undefined {
  const detected = counts.killed + counts.timeout;
  const valid = detected + counts.survived + counts.noCoverage;
  return valid === 0 ? undefined : (100 * detected) / valid;
}

type ShardOutcome = { name: string; code: number | null; seconds: number };

/** Runs the shards LANES at a time, longest first; the outcomes come back in the order of `names`. */
async function runShards(names: string[], flags: string[]): Promise<ShardOutcome[]> {
  const sizes = new Map(names.map((name) => [name, expectedSize(name)]));
  const queue = [...names].sort((a, b) => (sizes.get(b) ?? 0) - (sizes.get(a) ?? 0));
  const outcomes = new Map<string, ShardOutcome>();
  const lane = async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      console.log(`\n=== mutate ${name}${flags.includes('--smoke') ? ' (smoke)' : ''}`);
      const started = performance.now();
      const code = await runWorker(name, flags);
      const seconds = Math.round((performance.now() - started) / 1000);
      console.log(`=== ${name} done in ${seconds} s (exit ${code})`);
      outcomes.set(name, { name, code, seconds });
    }
  };
  await Promise.all(Array.from({ length: Math.min(LANES, names.length) }, lane));
  return names.map((name) => outcomes.get(name) as ShardOutcome);
}

async function main(): Promise<number> {
  const smoke = args.includes('--smoke');
  const force = args.includes('--force');
  const named = args.filter((arg) => !arg.startsWith('--'));
  const unknown = named.filter((name) => !(name in shards));
  if (unknown.length > 0) {
    console.error(`unknown shard ${unknown.join(', ')}; the shards: ${Object.keys(shards).join(', ')}`);
    return 2;
  }
  const selected = smoke ? [SMOKE.shard] : named.length > 0 ? named : Object.keys(shards);
  mkdirSync(reportDir, { recursive: true });

  const failures: string[] = [];
  const rows: Array<Record<string, string | number>> = [];
  const started = performance.now();
  for (const { name, code, seconds } of await runShards(selected, [...(smoke ? ['--smoke'] : []), ...(force ? ['--force'] : [])])) {
    const id = smoke ? `smoke-${name}` : name;
    if (code !== 0) {
      failures.push(`shard ${name} exited with ${code} after ${seconds} s`);
      continue;
    }
    const { modules } = JSON.parse(readFileSync(summaryFile(id), 'utf8')) as ShardSummary;
    const killedInShard = Object.values(modules).reduce((sum, counts) => sum + counts.killed + counts.timeout, 0);
    if (killedInShard === 0) failures.push(`shard ${name} killed no mutant: its tests do not reach the sandbox's mutated code`);
    for (const [module, counts] of Object.entries(modules)) {
      const percent = score(counts);
      if (!smoke && percent !== undefined && percent < MIN_SCORE) failures.push(`${module} scores ${percent.toFixed(1)}%, under ${MIN_SCORE}%`);
      rows.push({ shard: name, module, ...counts, score: percent === undefined ? 'n/a' : percent.toFixed(1), seconds });
    }
  }
  console.table(rows);
  console.log(`all shards: ${Math.round((performance.now() - started) / 1000)} s`);
  if (failures.length > 0) console.error(failures.join('\n'));
  return failures.length > 0 ? 1 : 0;
}
