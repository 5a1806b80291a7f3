import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAuditProducer, type AuditProducer, type AuditRecorder } from '@pcg/shared/audit';
import { DEFAULT_REDIS_URL } from '@pcg/shared/config';
import { openDatabase, postgresText } from '@pcg/shared/db';
import { createKeyResolver } from '@pcg/shared/grants';
import { createLogger } from '@pcg/shared/logger';
import { createQueryEngine, planQuery, prettyText, QueryInputSchema } from '@pcg/shared/query';
import { createReadService } from '@pcg/shared/reads';
import { createRedis } from '@pcg/shared/redis';
import { findObject, type ObjectDef } from '@pcg/shared/sectors';
import { createTestAgent } from '@pcg/testkit/testing';
import { pageSql } from '../../shared/src/query/query-sql.ts';
import { insertBenchConnection, insertBenchTransactions, openBenchDatabase } from './bench-database.ts';
import { runBench, sized, SMOKE, startChild } from './bench-run.ts';
import { ms, printTable } from './stats.ts';

/**
 * bench:tool-path — the `query` tool's own work in one process, without HTTP or MCP: CPU per call of the
 * bare SDK server's tool (the same SQL through pg, the rows as indented JSON) against the gateway's read
 * service (validation, plan, the page, the cursor, the audit row), side by side in one run, 32 calls in
 * flight. bench:mcp compares whole servers; this splits the gateway's difference into its parts: the read
 * path itself, and the audit hand-off (the row built and numbered, the spool's write, the push to Redis,
 * with the audit-writer running as in the service). The rows without the audit hand-off or without the
 * spool are measures, not configurations the gateway has.
 * Sizes: BENCH_TOOL_CALLS (18,000 a target), BENCH_TOOL_WARMUP (4,000 a target); BENCH_SMOKE=1: 300 and 100.
 */
const CALLS = sized('BENCH_TOOL_CALLS', 18_000, 300);
const WARMUP = sized('BENCH_TOOL_WARMUP', 4_000, 100);
const IN_FLIGHT = 32;
const ROUNDS = 6;
const root = path.resolve(import.meta.dirname, '../..');
const databaseName = `pcg_bench_tool_path_${process.pid}`;
const opened: Array<{ close(): Promise<unknown> }> = [];

/** `total` calls of `call`, `IN_FLIGHT` at a time. */
async function load(total: number, call: () => Promise<unknown>): Promise<void> {
  let issued = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < total) {
        issued += 1;
        await call();
      }
    }),
  );
}

await runBench(
  'tool-path',
  async () => {
    const bench = await openBenchDatabase(databaseName);
    opened.push({ close: () => bench.drop() });
    const raw = new pg.Pool({ connectionString: bench.url, max: 10 });
    raw.on('error', (error) => console.error('bench database connection lost:', error.message));
    opened.push({ close: () => raw.end() });
    await insertBenchConnection(bench.url);
    await insertBenchTransactions(raw, 100_000);
    const database = await openDatabase(bench.url);
    opened.push({ close: () => database.end() });
    const log = createLogger({ name: 'bench-tool-path', level: 'warn' });
    const key = await createTestAgent(database.pool, { name: 'bench-agent', sectors: ['finance'] });
    const resolved = await createKeyResolver({ db: database.pool, direct: database.direct, log }).resolveKey(key, new Date());
    if (!resolved.ok) throw new Error(`the bench agent's key was refused: ${resolved.reason}`);

    const settings = { REDIS_URL: process.env.REDIS_URL ?? DEFAULT_REDIS_URL, REDIS_PREFIX: `pcg-bench-tool-path-${process.pid}:` };
    const writerEnv = { ...settings, DATABASE_URL: bench.url, LOG_LEVEL: 'warn', AUDIT_QUEUE_CAPACITY: '1000000' };
    await startChild(path.join(root, 'services/audit-writer/src/main.ts'), '"audit-writer ready"', { env: { ...writerEnv, LOG_LEVEL: 'info' } });
    const redis = createRedis(settings, 'commands');
    opened.push({ close: async () => redis.disconnect() });
    const spoolDir = mkdtempSync(path.join(os.tmpdir(), 'pcg-bench-spool-'));
    opened.push({ close: async () => rmSync(spoolDir, { recursive: true, force: true }) });
    const producers: AuditProducer[] = [
      createAuditProducer({ redis, db: database.pool, source: 'bench-spooled', settings: { AUDIT_QUEUE_CAPACITY: 1_000_000 }, log, spoolDir }),
      createAuditProducer({ redis, db: database.pool, source: 'bench-memory', settings: { AUDIT_QUEUE_CAPACITY: 1_000_000 }, log }),
    ];
    opened.push({ close: () => Promise.all(producers.map((producer) => producer.drain())) });
    const [spooled, inMemory] = producers as [AuditProducer, AuditProducer];
    const noRow: AuditRecorder = { record: () => undefined };

    const engine = createQueryEngine({ db: database.pool, direct: database.direct });
    const input = { object: 'finance.transaction', where: [{ field: 'category', op: 'eq', value: 'dining' }], limit: 20 };
    const fragment = pageSql(planQuery(findObject('finance.transaction') as ObjectDef, QueryInputSchema.parse(input)));
    const bareSql = { text: postgresText(fragment.sql), values: [...fragment.values] };
    let requests = 0;
    const readsWith = (audit: AuditRecorder) => {
      const reads = createReadService({ db: database.pool, engine, audit, log, serviceName: 'bench' });
      return async () => prettyText(await reads.query({ kind: 'agent', grant: resolved.grant, requestId: `bench:${(requests += 1)}` }, input));
    };
    const BARE = 'bare SDK tool: pg, indented JSON';
    const targets: Record<string, () => Promise<unknown>> = {
      [BARE]: async () => {
        // The bare SDK server's tool, line for line (scripts/bench/peers/bare-sdk-server.ts).
        const result = await raw.query(bareSql.text, bareSql.values);
        const rows = result.rows.slice(0, -1);
        return JSON.stringify({ rows, row_count: rows.length, has_more: result.rows.length > rows.length }, null, 2);
      },
      'gateway read service, audit row spooled and pushed (as served)': readsWith(spooled),
      'gateway read service, audit row pushed, no spool (measure)': readsWith(inMemory),
      'gateway read service, no audit row (measure)': readsWith(noRow),
    };
    for (const call of Object.values(targets)) await load(WARMUP, call);
    // Turns, in an order that flips every round, as in bench:mcp: the same weather for every target.
    const cpu: Record<string, number> = {};
    const names = Object.keys(targets);
    const slice = Math.max(1, Math.floor(CALLS / ROUNDS));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const before = process.cpuUsage();
        await load(slice, targets[name] as () => Promise<unknown>);
        const used = process.cpuUsage(before);
        cpu[name] = (cpu[name] ?? 0) + (used.user + used.system) / 1000;
      }
    }
    const perCall = (name: string) => (cpu[name] ?? 0) / (slice * ROUNDS);
    printTable(
      `bench:tool-path — the query tool's own work in one process, ${IN_FLIGHT} in flight, ${(slice * ROUNDS).toLocaleString()} calls a target (CPU of this process, its threads included)`,
      names.map((name) => ({ target: name, 'cpu µs/call': Math.round(perCall(name) * 1000), 'vs bare tool': ms(perCall(name) / perCall(BARE)) })),
    );
    if (SMOKE) console.log('(smoke size: the numbers above say nothing about cost)');
  },
  async () => {
    for (const resource of opened.reverse()) await resource.close();
  },
);
