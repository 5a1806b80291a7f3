import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import { DEFAULT_REDIS_URL } from '@pcg/shared/config';
import { openDatabase } from '@pcg/shared/db';
import { planQuery, QueryInputSchema } from '@pcg/shared/query';
import { findObject, type ObjectDef } from '@pcg/shared/sectors';
import { createTestAgent } from '@pcg/testkit/testing';
import { pageSql } from '../../shared/src/query/query-sql.ts';
import { freePort } from '../local-services/index.ts';
import { insertBenchConnection, openBenchDatabase } from './bench-database.ts';
import { callTool, openSession } from './mcp-client.ts';
import { ms, printTable, summarize, timed } from './stats.ts';

/**
 * bench:mcp — `query` tool calls per second and p50/p99 over 32 sessions through the gateway, side by
 * side in one run with (a) a bare SDK Streamable HTTP server whose one tool runs the same SQL and
 * (b) a plain fastify route running the same SQL; then the gateway's resident memory with 0, 100 and
 * 512 idle sessions, and after a long run of calls (the SDK's JSON-mode leak would show there).
 */
const SESSIONS = 32;
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 6_000);
const SOAK_CALLS = Number(process.env.BENCH_MCP_SOAK ?? 100_000);
const root = path.resolve(import.meta.dirname, '../..');
const database = 'pcg_bench_mcp';
const redisUrl = process.env.REDIS_URL ?? DEFAULT_REDIS_URL;

const bench = await openBenchDatabase(database);
const url = bench.url;
const raw = new pg.Pool({ connectionString: url });
await insertBenchConnection(url);
await raw.query(`
  INSERT INTO finance_transactions (connection_id, source, source_id, posted_on, amount, currency, description, category, pending)
  SELECT '00000000-0000-0000-0000-00000000b0b0', 'bench', 'tx-' || g, date '2026-11-22' - (g % 700), round(((g::bigint * 7919) % 40000 - 30000) / 100.0, 2),
         'USD', 'PURCHASE ' || g, (ARRAY['groceries','transport','dining','shopping','travel'])[1 + g % 5], false
  FROM generate_series(1, 100000) AS g`);
await raw.query('ANALYZE finance_transactions');
const db = await openDatabase(url);
const key = await createTestAgent(db, { name: 'bench-agent', sectors: ['finance'] });
await db.end();

const input = { object: 'finance.transaction', where: [{ field: 'category', op: 'eq', value: 'dining' }], limit: 20 };
const fragment = pageSql(planQuery(findObject('finance.transaction') as ObjectDef, QueryInputSchema.parse(input)));
const benchSql = JSON.stringify({ text: fragment.sql.replaceAll('$slonik_', '$'), values: fragment.values });

const children: ChildProcess[] = [];
async function start(entry: string, env: Record<string, string>, readyText: string, nodeArgs: string[] = []): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, entry)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code}`)));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => line.includes(readyText) && resolve());
  });
  return child;
}
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

const serviceEnv = async () => ({
  DATABASE_URL: url,
  REDIS_URL: redisUrl,
  REDIS_PREFIX: `pcg-bench-mcp-${process.pid}:`,
  LOG_LEVEL: 'info',
  MCP_HTTP_PORT: String(await freePort()),
  AUDIT_QUEUE_CAPACITY: '1000000',
});

/** 32 concurrent loops, `total` calls in all; returns calls/s and per-call latencies. */
async function load(total: number, call: (loop: number) => Promise<void>) {
  const latencies: number[] = [];
  let issued = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: SESSIONS }, async (_, loop) => {
    while (issued < total) {
      issued += 1;
      latencies.push(await timed(() => call(loop)));
    }
  }));
  return { perSecond: total / ((performance.now() - started) / 1000), latency: summarize(latencies) };
}

const gatewayEnv = await serviceEnv();
await start('services/audit-writer/src/main.ts', gatewayEnv, '"audit-writer ready"');
// BENCH_GATEWAY_NODE_ARGS (e.g. --cpu-prof) profiles the gateway under this load.
const gateway = await start('services/gateway/src/main.ts', gatewayEnv, '"gateway ready"', (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean));
const gatewayUrl = `http://127.0.0.1:${gatewayEnv.MCP_HTTP_PORT}/mcp`;
const barePort = String(await freePort());
await start('scripts/bench/peers/bare-sdk-server.ts', { DATABASE_URL: url, PORT: barePort, BENCH_SQL: benchSql }, 'ready');
const fastifyPort = String(await freePort());
await start('scripts/bench/peers/plain-fastify-server.ts', { DATABASE_URL: url, PORT: fastifyPort, BENCH_SQL: benchSql }, 'ready');

const rssIdle0 = rssMb(gateway.pid as number);
// Idle sessions on the fresh gateway, before any load: 0, 100 and 512.
const idle: string[] = [];
const openIdle = async (count: number) => {
  while (idle.length < count) idle.push(...(await Promise.all(Array.from({ length: Math.min(32, count - idle.length) }, () => openSession(gatewayUrl, key)))));
};
const memory: Array<Record<string, string | number>> = [{ state: '0 sessions (before any call)', rss_mb: ms(rssIdle0) }];
await openIdle(100);
memory.push({ state: '100 idle sessions', rss_mb: ms(rssMb(gateway.pid as number)) });
await openIdle(512);
memory.push({ state: '512 idle sessions', rss_mb: ms(rssMb(gateway.pid as number)) });
memory.push({ state: 'cost of 512 idle sessions', rss_mb: ms(rssMb(gateway.pid as number) - rssIdle0) });
printTable('gateway resident memory (target: 512 idle sessions under 150 MB)', memory);

for (const id of idle.splice(0)) await fetch(gatewayUrl, { method: 'DELETE', headers: { 'mcp-session-id': id } }).then((r) => r.text());

const targets = {
  'gateway (auth, grant, audit)': async () => {
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => openSession(gatewayUrl, key)));
    return (loop: number) => callTool(gatewayUrl, sessions[loop] as string, 'query', input);
  },
  'bare SDK server': async () => {
    const bareUrl = `http://127.0.0.1:${barePort}/mcp`;
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => openSession(bareUrl)));
    return (loop: number) => callTool(bareUrl, sessions[loop] as string, 'query', {});
  },
  'plain fastify route': async () => async () => {
    const response = await fetch(`http://127.0.0.1:${fastifyPort}/query`, { method: 'POST' });
    await response.text();
  },
};
const rows: Array<Record<string, string | number>> = [];
const results: Record<string, number> = {};
for (const [name, prepare] of Object.entries(targets)) {
  const call = await prepare();
  await load(Math.min(1_000, CALLS), call);
  const { perSecond, latency } = await load(CALLS, call);
  results[name] = perSecond;
  rows.push({ target: name, 'calls/s': Math.round(perSecond), p50_ms: ms(latency.p50), p99_ms: ms(latency.p99) });
}
rows.push({ target: 'gateway / bare SDK', 'calls/s': ms((results['gateway (auth, grant, audit)'] ?? 0) / (results['bare SDK server'] ?? 1)), p50_ms: '', p99_ms: '' });
printTable(`bench:mcp — query tool over ${SESSIONS} sessions, ${CALLS} calls each (target: gateway ≥ 0.8 × bare SDK)`, rows);

if (SOAK_CALLS > 0) {
  const before = rssMb(gateway.pid as number);
  const call = await targets['gateway (auth, grant, audit)']();
  const { perSecond } = await load(SOAK_CALLS, call);
  printTable(`gateway after ${SOAK_CALLS.toLocaleString()} calls (SSE response mode; JSON mode leaks per call)`, [
    { state: 'before', rss_mb: ms(before) },
    { state: 'after', rss_mb: ms(rssMb(gateway.pid as number)), 'calls/s': Math.round(perSecond) },
  ]);
}

for (const child of children) child.kill('SIGTERM');
await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)))));
await raw.end();
await bench.drop();
