/**
 * `npm run bench:activity`: the activity rollup and its reads (issue 41) on a large audit record.
 *
 * Rows: BENCH_ACTIVITY_ROWS or `--rows=N` (default 10,000,000; the smoke size, BENCH_SMOKE=1, is 20,000). The
 * rows are made in Postgres with one INSERT … SELECT over generate_series, spread over 90 days, 7 agents, the six
 * sectors and four tools, one in 17 refused, one in 200 with args cut to "[truncated]" (rows as an older gateway
 * left them: unchained; the rollup reads only the columns). Measured, into a database of the bench's own that is
 * dropped afterwards: the first start's backfill, one incremental pass after a flush of 10,000 rows, the Console's
 * activity read and alert reads (median of 5), and beside them the same 30 days' figures grouped from audit_log
 * directly, which is what the rollup spares. No time is asserted.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { z } from 'zod';
import { createAlertStore, readActivity, rollUpActivityOnce } from '@pcg/shared/activity';
import { buildAuditRow, insertAuditRows } from '@pcg/shared/audit';
import { openDatabase, sql, type DatabasePool } from '@pcg/shared/db';
import { openBenchDatabase } from './bench-database.ts';

const rowsArgument = process.argv.slice(2).find((arg) => arg.startsWith('--rows='))?.slice('--rows='.length);
const ROWS = Number(rowsArgument ?? process.env.BENCH_ACTIVITY_ROWS ?? (process.env.BENCH_SMOKE === '1' ? 20_000 : 10_000_000));
if (!Number.isSafeInteger(ROWS) || ROWS < 1) throw new Error('--rows / BENCH_ACTIVITY_ROWS must be a positive whole number');
const FLUSH = 10_000;
const RUNS = 5;
const FILL_CHUNK = 1_000_000;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const fmt = (value: number) => Math.round(value).toLocaleString('en-US');
const seconds = (ms: number) => `${(ms / 1000).toFixed(3).padStart(8)} s`;

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

async function fill(db: DatabasePool): Promise<void> {
  for (let start = 0; start < ROWS; start += FILL_CHUNK) {
    const end = Math.min(ROWS, start + FILL_CHUNK);
    await db.query(sql.unsafe`
      INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at)
      SELECT 1, 'agent-' || (i % 7), (ARRAY['query', 'get_record', 'describe_context', 'fetch_live'])[1 + i % 4],
             (ARRAY['finance', 'health', 'mail', 'contacts', 'calendar', 'home'])[1 + i % 6],
             CASE WHEN i % 17 = 0 THEN 'deny' ELSE 'allow' END, CASE WHEN i % 17 = 0 THEN 'sector not granted' END,
             CASE WHEN i % 200 = 0 THEN '"[truncated]"'::jsonb
                  ELSE jsonb_build_object('object', (ARRAY['finance', 'health', 'mail', 'contacts', 'calendar', 'home'])[1 + i % 6] || '.record' || (i % 3), 'limit', 50) END,
             i % 50, 'ok', 'bench-' || i,
             now() - interval '90 days' + (i::float8 / ${ROWS}::int) * interval '90 days'
      FROM generate_series(${start}::int, ${end - 1}::int) i`);
    process.stdout.write(`  ${fmt(end)} rows written\r`);
  }
  await db.query(sql.unsafe`VACUUM ANALYZE audit_log`);
}

async function backfill(db: DatabasePool): Promise<number> {
  let rows = 0;
  for (;;) {
    const pass = await rollUpActivityOnce(db);
    rows += pass.rows;
    if (pass.rows === 0) return rows;
  }
}

/** The figures the screen draws, grouped from audit_log itself over the same 30 days: what the rollup spares. */
const directDaily = (db: DatabasePool) =>
  db.any(sql.unsafe`
    SELECT (created_at AT TIME ZONE 'UTC')::date AS day, agent_id, sector, count(*) AS calls, count(*) FILTER (WHERE decision = 'deny') AS denied
    FROM audit_log WHERE user_id = 1 AND created_at >= (now() AT TIME ZONE 'UTC')::date - 29 AND agent_id IS NOT NULL
    GROUP BY 1, 2, 3`);

async function medianOf(work: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run += 1) times.push((await timed(work)).ms);
  return median(times);
}

async function main(): Promise<void> {
  const bench = await openBenchDatabase(`pcg_bench_activity_${process.pid}_${randomBytes(3).toString('hex')}`);
  const database = await openDatabase(bench.url, { maximumPoolSize: 3, statementTimeout: 3_600_000 });
  const db = database.pool;
  try {
    console.log(`\nactivity: writing ${fmt(ROWS)} audit rows…`);
    const filled = await timed(() => fill(db));
    const first = await timed(() => backfill(db));
    if (first.value !== ROWS) throw new Error(`the backfill counted ${first.value} rows, not ${ROWS}`);
    const flushRows = Array.from({ length: FLUSH }, (_, index) =>
      buildAuditRow({ agentId: `agent-${index % 9}`, tool: 'query', sector: 'mail', decision: index % 17 === 0 ? 'deny' : 'allow', args: { object: `mail.new${index % 5}` }, outcome: 'ok' }).row,
    );
    await insertAuditRows(db, flushRows);
    const incremental = await timed(() => rollUpActivityOnce(db));
    if (incremental.value.rows !== FLUSH) throw new Error(`the incremental pass counted ${incremental.value.rows} rows, not ${FLUSH}`);
    const alerts = createAlertStore(db);
    const readMs = await medianOf(() => readActivity(db));
    const listMs = await medianOf(() => alerts.list());
    const countMs = await medianOf(() => alerts.countNew());
    const directMs = await medianOf(() => directDaily(db));
    const rollupRows = await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int8 AS n FROM activity_daily`);

    console.log(`\n${fmt(ROWS)} audit rows over 90 days (written in ${(filled.ms / 1000).toFixed(1)} s); activity_daily holds ${fmt(rollupRows)} rows; reads: median of ${RUNS}\n`);
    console.log('| step                                                    |       time |        rows/s |');
    console.log('|---------------------------------------------------------|-----------:|--------------:|');
    console.log(`| first start: backfill of every row (batches of 50,000)  | ${seconds(first.ms)} | ${fmt(ROWS / (first.ms / 1000)).padStart(13)} |`);
    console.log(`| one pass after a flush of ${fmt(FLUSH)} rows (with alerts)    | ${seconds(incremental.ms)} | ${fmt(FLUSH / (incremental.ms / 1000)).padStart(13)} |`);
    console.log(`| GET /api/activity's read (rollup, 30 days)              | ${seconds(readMs)} |               |`);
    console.log(`| GET /api/alerts's read                                  | ${seconds(listMs)} |               |`);
    console.log(`| GET /api/alerts/count's read                            | ${seconds(countMs)} |               |`);
    console.log(`| the same 30 days grouped from audit_log directly        | ${seconds(directMs)} |               |`);
    console.log(`\nmachine load average while measuring: ${os.loadavg().map((load) => load.toFixed(1)).join(' ')} on ${os.availableParallelism()} cores`);
  } finally {
    await database.end();
    await bench.drop();
  }
}

await main();
