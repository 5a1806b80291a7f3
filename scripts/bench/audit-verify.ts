/**
 * `npm run bench:audit-verify`: how fast `verifyAuditChain` walks an untouched chain, beside a plain
 * `SELECT count(*)` over the same table (the floor: one sequential scan, nothing sent to the client).
 *
 * Rows: BENCH_VERIFY_ROWS or `--rows=N` (default 1,000,000; e.g. `--rows=20000` runs in seconds, for CI).
 * The chain is written through the audit-writer's own chained INSERT, 10,000 rows a flush, each row
 * linked with a chain key as the audit-writer links it (HMAC-SHA-256), and walked with that key, into a
 * database of the bench's own on the Postgres `npm start` would use; it is dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { z } from 'zod';
import { AUDIT_FLUSH_BATCH_SIZE } from '../../services/audit-writer/src/writer.ts';
import { buildAuditRow, insertAuditRows, verifyAuditChain, type QueuedAuditRow } from '@pcg/shared/audit';
import { auditChainKeyId } from '@pcg/shared/crypto';
import { openDatabase, sql, type DatabasePool } from '@pcg/shared/db';
import { openBenchDatabase } from './bench-database.ts';

const rowsArgument = process.argv.slice(2).find((arg) => arg.startsWith('--rows='))?.slice('--rows='.length);
const ROWS = Number(rowsArgument ?? process.env.BENCH_VERIFY_ROWS ?? 1_000_000);
if (!Number.isSafeInteger(ROWS) || ROWS < 1) throw new Error('--rows / BENCH_VERIFY_ROWS must be a positive whole number');
const RUNS = 3;
const TOOLS = ['query', 'get_record', 'describe_context', 'fetch_live'];
const SECTORS = ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'];

/** A flush of rows shaped like `npm run bench:audit`'s: allowed reads with a filter or two, some refusals. */
function batch(start: number, count: number): QueuedAuditRow[] {
  return Array.from({ length: count }, (_, offset) => {
    const index = start + offset;
    const sector = SECTORS[index % SECTORS.length] ?? 'finance';
    const denied = index % 17 === 0;
    return buildAuditRow({
      agentId: `agent-${index % 7}`,
      tool: TOOLS[index % TOOLS.length] ?? 'query',
      sector,
      decision: denied ? 'deny' : 'allow',
      denyReason: denied ? `sector '${sector}' is not granted` : null,
      args: {
        object: `${sector}.record`,
        where: [{ field: 'posted_on', op: 'gte', value: '2026-01-01' }, { field: 'amount', op: 'lt', value: -25.5 + index }],
        order_by: [{ field: 'posted_on', direction: 'desc' }],
        limit: 50,
      },
      resultCount: denied ? 0 : index % 50,
      outcome: index % 101 === 0 ? 'error' : 'ok',
    }).row;
  });
}

const KEY_BYTES = randomBytes(32);
const KEY = { bytes: KEY_BYTES, id: auditChainKeyId(KEY_BYTES) };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const fmt = (value: number) => Math.round(value).toLocaleString('en-US');

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

async function fill(db: DatabasePool): Promise<number> {
  const started = performance.now();
  for (let start = 0; start < ROWS; start += AUDIT_FLUSH_BATCH_SIZE) {
    await insertAuditRows(db, batch(start, Math.min(AUDIT_FLUSH_BATCH_SIZE, ROWS - start)), { key: KEY.bytes });
    if (start % 100_000 === 0 && start > 0) process.stdout.write(`  ${fmt(start)} rows written\r`);
  }
  await db.query(sql.unsafe`VACUUM ANALYZE audit_log`);
  return performance.now() - started;
}

async function main(): Promise<void> {
  const bench = await openBenchDatabase(`pcg_bench_verify_${process.pid}_${randomBytes(3).toString('hex')}`);
  const database = await openDatabase(bench.url, { maximumPoolSize: 3, statementTimeout: 600_000 });
  const db = database.pool;
  try {
    console.log(`\naudit chain verify: writing ${fmt(ROWS)} chained rows…`);
    const fillMs = await fill(db);
    const tableBytes = await db.oneFirst(sql.type(z.object({ bytes: z.number() }))`SELECT pg_total_relation_size('audit_log')::int8 AS bytes`);

    const verifyTimes: number[] = [];
    const countTimes: number[] = [];
    let peakHeap = 0;
    for (let run = 0; run < RUNS; run += 1) {
      const count = await timed(() => db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int8 AS n FROM audit_log`));
      if (count.value !== ROWS) throw new Error(`count(*) found ${count.value} rows, not ${ROWS}`);
      countTimes.push(count.ms);
      const sampler = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 20);
      const verify = await timed(() => verifyAuditChain(db, { key: KEY }));
      clearInterval(sampler);
      if (!verify.value.intact || verify.value.intactThrough.row !== ROWS || verify.value.firstKeyedRow !== 1) throw new Error(`the untouched chain did not verify: ${JSON.stringify(verify.value.break)}`);
      verifyTimes.push(verify.ms);
    }

    const verifyMs = median(verifyTimes);
    const countMs = median(countTimes);
    console.log(`\n${fmt(ROWS)} chained rows (${(tableBytes / 2 ** 20).toFixed(0)} MB with the index; written in ${(fillMs / 1000).toFixed(1)} s), median of ${RUNS} runs\n`);
    console.log('| pass over audit_log                      |   time |       rows/s | vs count(*) |');
    console.log('|------------------------------------------|-------:|-------------:|------------:|');
    console.log(`| verifyAuditChain (keyset pages, HMAC)    | ${(verifyMs / 1000).toFixed(2).padStart(5)}s | ${fmt(ROWS / (verifyMs / 1000)).padStart(12)} | ${(verifyMs / countMs).toFixed(1).padStart(10)}x |`);
    console.log(`| SELECT count(*) (sequential scan)        | ${(countMs / 1000).toFixed(2).padStart(5)}s | ${fmt(ROWS / (countMs / 1000)).padStart(12)} |        1.0x |`);
    console.log(`\npeak JS heap while verifying: ${(peakHeap / 2 ** 20).toFixed(0)} MB (keyset pages of 5,000 rows: the same for any row count)`);
    console.log(`machine load average while measuring: ${os.loadavg().map((load) => load.toFixed(1)).join(' ')} on ${os.availableParallelism()} cores`);
  } finally {
    await database.end();
    await bench.drop();
  }
}

await main();
