import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { DEFAULT_REDIS_URL } from '@pcg/shared/config';
import { openDatabase, postgresText } from '@pcg/shared/db';
import { planQuery, QueryInputSchema } from '@pcg/shared/query';
import { findObject, type ObjectDef } from '@pcg/shared/sectors';
import { createTestAgent } from '@pcg/testkit/testing';
import { pageSql } from '../../shared/src/query/query-sql.ts';
import { freePort } from '../local-services/index.ts';
import { insertBenchConnection, insertBenchTransactions, openBenchDatabase } from './bench-database.ts';
import { runBench, sized, SMOKE, startChild } from './bench-run.ts';
import { callTool, callToolModern, closeSession, openSession } from './mcp-client.ts';
import { ms, printTable, summarize, timed } from './stats.ts';

/**
 * bench:mcp — `query` tool calls per second and p50/p99 of both protocol eras, 32 calls in flight, side by
 * side in one run: the gateway's sessions (2025 era) against a bare v1 SDK Streamable HTTP server (stateful,
 * one McpServer per session) whose one tool runs the same SQL; the gateway's stateless lane (revision
 * 2026-07-28) against a bare v2 SDK server (`createMcpHandler`, stateless) doing the same; and a plain
 * fastify route running the same SQL; the memory of 512 idle sessions on both servers;
 * and, over a long run of calls on each of the gateway and the bare v1 server in turn, heap and RSS after a
 * forced collection every 50,000 calls. It ends with the memory rows side by side: idle, after the measured
 * calls, after the long run, and then after a memory-reducing collection (V8 gives back the heap pages it
 * kept free), gateway / bare (target ≤ 1.3 for RSS).
 *
 * Sizes: BENCH_MCP_CALLS (6,000), BENCH_MCP_WARMUP (4,000 per target), BENCH_MCP_SOAK (500,000),
 * BENCH_MCP_HEAP_EVERY (50,000), BENCH_MCP_IDLE (512), BENCH_MCP_ROWS (100,000); BENCH_SMOKE=1 makes them
 * a few hundred.
 * BENCH_GATEWAY_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the gateway under this load;
 * BENCH_BARE_NODE_ARGS the bare v1 SDK server, BENCH_BARE_V2_NODE_ARGS the bare v2 one.
 * The servers inherit the environment, so an allocator set for the run applies to the gateway and the bare
 * servers alike: `MALLOC_ARENA_MAX=2 npm run bench:mcp`, or jemalloc from Debian's libjemalloc2 with
 * `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 npm run bench:mcp`.
 */
const SESSIONS = 32;
/** Turns the targets take at the calls, alternating (see below). */
const ROUNDS = 8;
const CALLS = sized('BENCH_MCP_CALLS', 6_000, 300);
/**
 * Calls each target takes before it is measured. The gateway runs far more code per call than the bare
 * server, and the JIT takes longer to optimise it: after 1,000 warm-up calls, its CPU per call still fell
 * from 1.1 ms to 0.76 ms over the next 6,000 (the bare server's from 0.64 to 0.55). A server runs for
 * days, so the measure is of the settled code.
 */
const WARMUP = sized('BENCH_MCP_WARMUP', 4_000, 100);
const SOAK_CALLS = sized('BENCH_MCP_SOAK', 500_000, 400);
const HEAP_EVERY = sized('BENCH_MCP_HEAP_EVERY', 50_000, 200);
const IDLE = sized('BENCH_MCP_IDLE', 512, 16);
const ROWS = sized('BENCH_MCP_ROWS', 100_000, 2_000);
const root = path.resolve(import.meta.dirname, '../..');
// Per run, so two runs (or a run and CI's smoke) never drop each other's database.
const databaseName = `pcg_bench_mcp_${process.pid}`;
const redisUrl = process.env.REDIS_URL ?? DEFAULT_REDIS_URL;
const probe = ['--expose-gc', '--import', path.join(root, 'scripts/bench/peers/heap-probe.ts')];


/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  // After the command name: state is field 3, so utime and stime (14 and 15) are at 11 and 12 here.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

type Usage = { heapMb: number; rssMb: number; heapTotalMb: number; externalMb: number };

/**
 * Heap used after a forced collection, and RSS, in MB, from a child started with the heap probe; `reduced`:
 * after a memory-reducing collection, which shows what a server holds rather than what its heap kept free.
 */
function heapOf(child: ChildProcess, reduced = false): Promise<Usage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the heap probe did not answer')), 30_000);
    child.once('message', (message) => {
      clearTimeout(timer);
      const usage = message as { heapUsed: number; heapTotal: number; external: number; rss: number; collected: boolean };
      if (!usage.collected) return reject(new Error('the heap probe runs without --expose-gc'));
      resolve({ heapMb: usage.heapUsed / 2 ** 20, rssMb: usage.rss / 2 ** 20, heapTotalMb: usage.heapTotal / 2 ** 20, externalMb: usage.external / 2 ** 20 });
    });
    child.send(reduced ? 'heap-reduced' : 'heap');
  });
}

/** 32 concurrent loops, `total` calls in all; `every` is called after each `step` calls. */
async function load(total: number, call: (loop: number) => Promise<void>, checkpoint?: { step: number; every: (done: number) => Promise<void> }) {
  const latencies: number[] = [];
  let issued = 0;
  let done = 0;
  let paused: Promise<void> | undefined;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, loop) => {
      for (;;) {
        while (paused) await paused;
        if (issued >= total) return;
        issued += 1;
        latencies.push(await timed(() => call(loop)));
        done += 1;
        if (checkpoint && done % checkpoint.step === 0) {
          // Let the calls in flight land, then measure with nothing running.
          paused ??= (async () => {
            while (done < issued) await new Promise((resolve) => setImmediate(resolve));
            await checkpoint.every(done);
            paused = undefined;
          })();
        }
      }
    }),
  );
  return { perSecond: total / ((performance.now() - started) / 1000), latency: summarize(latencies), latencies };
}

const opened: Array<{ close(): Promise<unknown> }> = [];

await runBench(
  'mcp',
  async () => {
    const bench = await openBenchDatabase(databaseName);
    opened.push({ close: () => bench.drop() });
    const url = bench.url;
    const raw = new pg.Pool({ connectionString: url });
    raw.on('error', (error) => console.error('bench database connection lost:', error.message));
    opened.push({ close: () => raw.end() });
    await insertBenchConnection(url);
    await insertBenchTransactions(raw, ROWS);
    const database = await openDatabase(url);
    const key = await createTestAgent(database.pool, { name: 'bench-agent', sectors: ['finance'] });
    await database.end();

    const input = { object: 'finance.transaction', where: [{ field: 'category', op: 'eq', value: 'dining' }], limit: 20 };
    const fragment = pageSql(planQuery(findObject('finance.transaction') as ObjectDef, QueryInputSchema.parse(input)));
    const benchSql = JSON.stringify({ text: postgresText(fragment.sql), values: fragment.values });

    const gatewayEnv = {
      DATABASE_URL: url,
      REDIS_URL: redisUrl,
      REDIS_PREFIX: `pcg-bench-mcp-${process.pid}:`,
      LOG_LEVEL: 'info',
      MCP_HTTP_PORT: String(await freePort()),
      AUDIT_QUEUE_CAPACITY: '1000000',
    };
    await startChild(path.join(root, 'services/audit-writer/src/main.ts'), '"audit-writer ready"', { env: gatewayEnv });
    const gatewayArgs = [...probe, ...(process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean)];
    const gateway = await startChild(path.join(root, 'services/gateway/src/main.ts'), '"gateway ready"', { env: gatewayEnv, nodeArgs: gatewayArgs, ipc: true });
    const gatewayUrl = `http://127.0.0.1:${gatewayEnv.MCP_HTTP_PORT}/mcp`;
    const barePort = String(await freePort());
    const bare = await startChild(path.join(root, 'scripts/bench/peers/bare-sdk-server.ts'), 'ready', {
      env: { DATABASE_URL: url, PORT: barePort, BENCH_SQL: benchSql },
      nodeArgs: [...probe, ...(process.env.BENCH_BARE_NODE_ARGS ?? '').split(' ').filter(Boolean)],
      ipc: true,
    });
    const bareUrl = `http://127.0.0.1:${barePort}/mcp`;
    const bareV2Port = String(await freePort());
    const bareV2 = await startChild(path.join(root, 'scripts/bench/peers/bare-v2-server.ts'), 'ready', {
      env: { DATABASE_URL: url, PORT: bareV2Port, BENCH_SQL: benchSql },
      nodeArgs: [...probe, ...(process.env.BENCH_BARE_V2_NODE_ARGS ?? '').split(' ').filter(Boolean)],
      ipc: true,
    });
    const bareV2Url = `http://127.0.0.1:${bareV2Port}/mcp`;
    // The query tool mirrors its `object` argument in this header on the modern lane (x-mcp-header).
    const paramHeaders = { 'mcp-param-object': input.object };
    const fastifyPort = String(await freePort());
    const plain = await startChild(path.join(root, 'scripts/bench/peers/plain-fastify-server.ts'), 'ready', { env: { DATABASE_URL: url, PORT: fastifyPort, BENCH_SQL: benchSql } });

    // Idle sessions on the fresh servers, before any load: what each costs, measured the same way on both.
    const memory: Array<Record<string, string | number>> = [];
    // Resident memory and heap after a forced collection, each as the idle sessions' cost. RSS is what the
    // machine pays, but it moves with pages the allocators keep or return; the heap is the steadier measure.
    const idleCost: Record<string, { rss: number; heap: number }> = {};
    // Each server's memory at the three points the closing table compares: idle, after the measured calls, after the long run.
    const compared: Record<'idle' | 'measured' | 'long' | 'reduced', { gateway?: Usage; bare?: Usage }> = { idle: {}, measured: {}, long: {}, reduced: {} };
    for (const [name, child, target, sessionKey] of [
      ['gateway', gateway, gatewayUrl, key],
      ['bare SDK server', bare, bareUrl, undefined],
    ] as const) {
      // A first round of sessions, closed again, so one-time costs (compiled code, pools, first buffers)
      // are not counted as the cost of idle sessions.
      for (const id of await Promise.all(Array.from({ length: 32 }, () => openSession(target, sessionKey)))) await closeSession(target, id, sessionKey);
      const before = await heapOf(child);
      compared.idle[child === gateway ? 'gateway' : 'bare'] = before;
      const idle: string[] = [];
      while (idle.length < IDLE) {
        idle.push(...(await Promise.all(Array.from({ length: Math.min(32, IDLE - idle.length) }, () => openSession(target, sessionKey)))));
      }
      const after = await heapOf(child);
      idleCost[name] = { rss: after.rssMb - before.rssMb, heap: after.heapMb - before.heapMb };
      const parts = (usage: typeof before) => ({ rss_mb: ms(usage.rssMb), heap_used_mb: ms(usage.heapMb), heap_total_mb: ms(usage.heapTotalMb), external_mb: ms(usage.externalMb) });
      memory.push({ server: name, state: 'idle, no session', ...parts(before) });
      memory.push({ server: name, state: `${IDLE} idle sessions`, ...parts(after) });
      memory.push({ server: name, state: `cost of ${IDLE} idle sessions`, rss_mb: ms(after.rssMb - before.rssMb), heap_used_mb: ms(after.heapMb - before.heapMb), heap_total_mb: '', external_mb: '' });
      for (const id of idle) await closeSession(target, id, sessionKey);
      // Collected now, on both servers: the closed sessions' garbage is the idle phase's, and would
      // otherwise be charged to whichever calls below met the collection. It also shows nothing stays.
      const closed = await heapOf(child);
      memory.push({ server: name, state: `${IDLE} sessions closed`, ...parts(closed) });
    }
    const costRatio = (part: 'rss' | 'heap') => ms((idleCost.gateway?.[part] ?? 0) / (idleCost['bare SDK server']?.[part] ?? 1));
    memory.push({ server: 'gateway / bare SDK', state: `cost of ${IDLE} idle sessions (target ≤ 1.2)`, rss_mb: costRatio('rss'), heap_used_mb: costRatio('heap'), heap_total_mb: '', external_mb: '' });
    printTable(`bench:mcp — resident memory and heap after a forced collection, ${IDLE} idle sessions`, memory);

    const GATEWAY = 'gateway (auth, grant, audit)';
    const BARE = 'bare SDK server';
    const GATEWAY_MODERN = 'gateway 2026-07-28 lane';
    const BARE_V2 = 'bare v2 SDK server (stateless)';
    const serverOf: Record<string, ChildProcess> = { [GATEWAY]: gateway, [BARE]: bare, [GATEWAY_MODERN]: gateway, [BARE_V2]: bareV2, 'plain fastify route': plain };
    const targets = {
      'gateway (auth, grant, audit)': async () => {
        const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => openSession(gatewayUrl, key)));
        return (loop: number) => callTool(gatewayUrl, sessions[loop] as string, 'query', input, key);
      },
      'bare SDK server': async () => {
        const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => openSession(bareUrl)));
        return (loop: number) => callTool(bareUrl, sessions[loop] as string, 'query', {});
      },
      [GATEWAY_MODERN]: async () => () => callToolModern(gatewayUrl, 'query', input, paramHeaders, key),
      [BARE_V2]: async () => () => callToolModern(bareV2Url, 'query', input, paramHeaders),
      'plain fastify route': async () => async () => {
        const response = await fetch(`http://127.0.0.1:${fastifyPort}/query`, { method: 'POST' });
        await response.text();
        if (response.status !== 200) throw new Error(`plain fastify route answered ${response.status}`);
      },
    };
    // The targets take turns, a slice of the calls each, in an order that flips every round: on a machine
    // shared with other work the load moves during a run, and turns give every target the same weather.
    const calls: Record<string, (loop: number) => Promise<void>> = {};
    for (const [name, prepare] of Object.entries(targets)) {
      calls[name] = await prepare();
      await load(WARMUP, calls[name]);
    }
    const measured: Record<string, { seconds: number; latencies: number[]; cpu: number }> = {};
    const names = Object.keys(targets);
    const slice = Math.max(1, Math.floor(CALLS / ROUNDS));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const pid = serverOf[name]?.pid as number;
        const cpuBefore = cpuMs(pid);
        const { perSecond, latencies } = await load(slice, calls[name] as (loop: number) => Promise<void>);
        const entry = (measured[name] ??= { seconds: 0, latencies: [], cpu: 0 });
        entry.seconds += slice / perSecond;
        entry.latencies.push(...latencies);
        entry.cpu += cpuMs(pid) - cpuBefore;
      }
    }
    const rows: Array<Record<string, string | number>> = [];
    const results: Record<string, { perSecond: number; p99: number; cpu: number }> = {};
    for (const name of names) {
      const entry = measured[name] as { seconds: number; latencies: number[]; cpu: number };
      const total = slice * ROUNDS;
      const latency = summarize(entry.latencies);
      // The server's own CPU per call (Linux /proc): steadier than calls/s on a machine shared with other work.
      results[name] = { perSecond: total / entry.seconds, p99: latency.p99, cpu: entry.cpu / total };
      rows.push({ target: name, 'calls/s': Math.round(total / entry.seconds), p50_ms: ms(latency.p50), p99_ms: ms(latency.p99), 'server cpu ms/call': ms(entry.cpu / total) });
    }
    // Each era against its own bare server; the targets: ≥ 1.0 × the bare server's calls/s, p99 ≤ 1.1 × its p99.
    for (const [label, ours, theirs] of [
      ['2025 era: gateway / bare v1 SDK', GATEWAY, BARE],
      ['2026-07-28: gateway / bare v2 SDK', GATEWAY_MODERN, BARE_V2],
    ] as const) {
      const gw = results[ours];
      const sdk = results[theirs];
      rows.push({
        target: label,
        'calls/s': ms((gw?.perSecond ?? 0) / (sdk?.perSecond ?? 1)),
        p50_ms: '',
        p99_ms: ms((gw?.p99 ?? 0) / (sdk?.p99 ?? 1)),
        'server cpu ms/call': ms((gw?.cpu ?? 0) / (sdk?.cpu ?? 1)),
      });
    }
    printTable(`bench:mcp — query tool, ${SESSIONS} calls in flight (sessions in the 2025 era), ${CALLS} calls (targets per era: gateway ≥ 1.0 × its bare SDK server's calls/s, p99 ≤ 1.1 × its p99)`, rows);

    // Memory after the measured calls, on each server process (the gateway served both of its lanes):
    // idle RSS is above; this is what each holds once it has answered calls, after a forced collection.
    const afterCalls: Array<Record<string, string | number>> = [];
    for (const [name, child] of [['gateway (both lanes)', gateway], ['bare v1 SDK server', bare], ['bare v2 SDK server', bareV2]] as const) {
      const usage = await heapOf(child);
      if (child === gateway) compared.measured.gateway = usage;
      if (child === bare) compared.measured.bare = usage;
      afterCalls.push({ server: name, rss_mb: ms(usage.rssMb), heap_used_mb: ms(usage.heapMb), heap_total_mb: ms(usage.heapTotalMb), external_mb: ms(usage.externalMb) });
    }
    printTable(`bench:mcp — memory after the warm-up and measured calls (${(WARMUP + CALLS).toLocaleString()} a target), after a forced collection`, afterCalls);

    if (SOAK_CALLS > 0) {
      // Each server in turn, on the sessions of the rounds above (not 32 more), the gateway first.
      const soaked = [
        { side: 'gateway' as const, child: gateway, call: calls[GATEWAY] as (loop: number) => Promise<void> },
        { side: 'bare' as const, child: bare, call: calls[BARE] as (loop: number) => Promise<void> },
      ];
      const points: Record<number, Record<string, string | number>> = {};
      const rates: string[] = [];
      for (const { side, child, call } of soaked) {
        const first = await heapOf(child);
        let firstAfterLoad: number | undefined;
        const record = (done: number, usage: Usage) => {
          const row = (points[done] ??= { calls: done });
          row[`${side} heap_mb`] = ms(usage.heapMb);
          row[`${side} rss_mb`] = ms(usage.rssMb);
          if (side === 'gateway') row['gateway heap vs first'] = done === 0 ? 1 : ms(usage.heapMb / (firstAfterLoad ??= usage.heapMb));
        };
        record(0, first);
        const { perSecond } = await load(SOAK_CALLS, call, {
          step: HEAP_EVERY,
          every: async (done) => {
            const usage = await heapOf(child);
            record(done, usage);
            compared.long[side] = usage;
            // Shown as it goes too: a long run that is stopped early still says what it saw.
            console.log(`  ${side} after ${done.toLocaleString()} calls: heap ${ms(usage.heapMb)} MB, rss ${ms(usage.rssMb)} MB`);
          },
        });
        rates.push(`${side} ${Math.round(perSecond)} calls/s`);
      }
      printTable(
        `bench:mcp — heap and RSS after a forced collection every ${HEAP_EVERY.toLocaleString()} of ${SOAK_CALLS.toLocaleString()} calls on each server (${rates.join(', ')}; target: the gateway's heap flat within 10% of its first checkpoint)`,
        Object.values(points),
      );
    }

    // Last, so it changes no row above: what each server holds once its heap has given back the pages it kept free.
    compared.reduced = { gateway: await heapOf(gateway, true), bare: await heapOf(bare, true) };

    // The memory rows side by side (issue 38's target: the gateway's RSS ≤ 1.3 × the bare v1 server's, idle and after the long run).
    const summary: Array<Record<string, string | number>> = [];
    for (const [state, label] of [
      ['idle', 'idle, no session'],
      ['measured', `after ${(WARMUP + CALLS).toLocaleString()} calls a target`],
      ['long', `after ${SOAK_CALLS.toLocaleString()} more calls`],
      ['reduced', 'then after a memory-reducing collection'],
    ] as const) {
      const { gateway: ours, bare: theirs } = compared[state];
      if (!ours || !theirs) continue;
      summary.push({
        state: label,
        'gateway rss_mb': ms(ours.rssMb),
        'bare rss_mb': ms(theirs.rssMb),
        'rss gateway / bare (≤ 1.3)': ms(ours.rssMb / theirs.rssMb),
        'gateway heap_mb': ms(ours.heapMb),
        'bare heap_mb': ms(theirs.heapMb),
        'heap gateway / bare': ms(ours.heapMb / theirs.heapMb),
      });
    }
    printTable('bench:mcp — memory, gateway against the bare v1 SDK server, after a forced collection', summary);
    if (SMOKE) console.log('(smoke size: the numbers above say nothing about throughput)');
  },
  async () => {
    for (const resource of opened.reverse()) await resource.close();
  },
);
