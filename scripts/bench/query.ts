import pg from 'pg';
import { openDatabase, postgresText } from '@pcg/shared/db';
import { createQueryEngine, planQuery, QueryInputSchema } from '@pcg/shared/query';
import { findObject, type ObjectDef } from '@pcg/shared/sectors';
import { aggregateSql, pageSql } from '../../shared/src/query/query-sql.ts';
import { insertBenchConnection, openBenchDatabase } from './bench-database.ts';
import { runBench, sized } from './bench-run.ts';
import { ms, printTable, summarize, timed } from './stats.ts';

/**
 * bench:query — 1,000,000 transactions; p50/p99 of a filtered, sorted page and of a grouped aggregate
 * through the engine (validation, planning, slonik, row mapping), side by side with the identical SQL
 * sent straight through `pg`, in the same run on the same database.
 * Sizes: BENCH_ROWS (1,000,000), BENCH_ITERATIONS (300); BENCH_SMOKE=1 makes them 5,000 and 20.
 */
const ROWS = sized('BENCH_ROWS', 1_000_000, 5_000);
const ITERATIONS = sized('BENCH_ITERATIONS', 300, 20);
// Per run, so two runs never drop each other's database.
const databaseName = `pcg_bench_query_${process.pid}`;

const opened: Array<{ close(): Promise<unknown> }> = [];

await runBench('query', async () => {
  const bench = await openBenchDatabase(databaseName);
  opened.push({ close: () => bench.drop() });
  const url = bench.url;
  const database = await openDatabase(url);
  const db = database.pool;
  opened.push({ close: () => database.end() });
  const raw = new pg.Pool({ connectionString: url, max: 10 });
  opened.push({ close: () => raw.end() });

  console.log(`filling ${ROWS.toLocaleString()} transactions…`);
  // Filled through plain pg: the service pool's 30 s statement timeout is too short for a million rows.
  await insertBenchConnection(url);
  await raw.query(`
    INSERT INTO finance_transactions (connection_id, source, source_id, account_id, posted_on, amount, currency, description, merchant_name, provider_category, pending)
    SELECT '00000000-0000-0000-0000-00000000b0b0', 'bench', 'tx-' || g, 'acc-' || (g % 3),
           CASE WHEN g % 50 = 0 THEN NULL ELSE date '2026-11-22' - (g % 1500) END,
           round(((g::bigint * 7919) % 40000 - 30000) / 100.0, 2), 'USD', 'PURCHASE ' || g,
           'Shop ' || (g % 200), (ARRAY['groceries','transport','dining','shopping','travel'])[1 + g % 5], g % 97 = 0
    FROM generate_series(1, $1::int) AS g`, [ROWS]);
  await raw.query('ANALYZE finance_transactions');

  const object = findObject('finance.transaction') as ObjectDef;
  const engine = createQueryEngine({ db, direct: database.direct });
  const cases = {
    'filtered sorted page': {
      object: object.name,
      where: [{ field: 'category', op: 'eq', value: 'dining' }, { field: 'amount', op: 'lt', value: '0' }],
      order_by: [{ field: 'posted_on', direction: 'desc' }],
      limit: 50,
    },
    'grouped aggregate': {
      object: object.name,
      where: [{ field: 'amount', op: 'lt', value: 0 }, { field: 'posted_on', op: 'gte', value: '2026-01-01' }],
      aggregate: { group_by: ['category'], metrics: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }] },
    },
  } as const;

  const results: Array<Record<string, string | number>> = [];
  for (const [name, input] of Object.entries(cases)) {
    const plan = planQuery(object, QueryInputSchema.parse(input));
    const fragment = plan.aggregate ? aggregateSql(plan, plan.aggregate) : pageSql(plan);
    // Exactly the text slonik sends.
    const text = postgresText(fragment.sql);
    const values = fragment.values as unknown[];
    const viaEngine: number[] = [];
    const viaPg: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      await engine.query(object, input);
      await raw.query(text, values);
    }
    for (let i = 0; i < ITERATIONS; i += 1) {
      // Alternate the order so neither side always runs on a warmer cache.
      if (i % 2 === 0) {
        viaEngine.push(await timed(() => engine.query(object, input)));
        viaPg.push(await timed(() => raw.query(text, values)));
      } else {
        viaPg.push(await timed(() => raw.query(text, values)));
        viaEngine.push(await timed(() => engine.query(object, input)));
      }
    }
    const e = summarize(viaEngine);
    const r = summarize(viaPg);
    results.push({ case: name, path: 'engine', p50_ms: ms(e.p50), p99_ms: ms(e.p99) });
    results.push({ case: name, path: 'raw pg', p50_ms: ms(r.p50), p99_ms: ms(r.p99) });
    results.push({ case: name, path: 'ratio engine/raw', p50_ms: ms(e.p50 / r.p50), p99_ms: ms(e.p99 / r.p99) });
  }
  printTable(`bench:query — ${ROWS.toLocaleString()} transactions, ${ITERATIONS} runs per path (target: ratio ≤ 1.3; page p99 < 20 ms)`, results);
}, async () => {
  for (const resource of opened.reverse()) await resource.close();
});
