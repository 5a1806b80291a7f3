/**
 * `npm run bench:audit`: how fast audit rows go from the Redis queue into Postgres through the
 * audit-writer's real flush path with the chain keyed (a chain key as the writer generates into DATA_DIR,
 * so each row's link is an HMAC), beside a COPY of the same rows into the same database in the same run
 * (the practical ceiling, unchained), and how long one flush of 10,000 rows takes against AUDIT_FLUSH_MS.
 * The producer line counts only the rows Redis acknowledged, with the rows dropped beside them.
 *
 * Environment: BENCH_PG_URL (a server URL; default the local postgres/postgres), REDIS_URL, and
 * BENCH_AUDIT_ROWS (default 100000; BENCH_SMOKE=1: 2,000 rows, two runs). It creates and drops its own database and Redis prefix.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { z } from 'zod';
import {
  AUDIT_QUEUE_KEY,
  buildAuditRow,
  createAuditProducer,
  type AuditEvent,
  type QueuedAuditRow,
} from '@pcg/shared/audit';
import { createDatabase, runMigrations, sql, type Database, type DatabasePool } from '@pcg/shared/db';
import { createLogger } from '@pcg/shared/logger';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { AUDIT_FLUSH_BATCH_SIZE, createAuditWriter } from '../../services/audit-writer/src/writer.ts';
import { withDatabase } from '../local-services/index.ts';
import { runBench, sized, SMOKE } from './bench-run.ts';

const SERVER_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROWS = sized('BENCH_AUDIT_ROWS', 100_000, 2_000);
const RUNS = SMOKE ? 2 : 5;
const FLUSH_SAMPLES = SMOKE ? 1 : 5;
const FLUSH_MS = 1000;

const TOOLS = ['query', 'get_record', 'describe_context', 'get_schema', 'fetch_live', 'list_actions', 'invoke_action'];
const SECTORS = ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'];

/** Rows shaped like real traffic: mostly allowed reads with a filter or two, some refusals. */
function makeEvents(count: number): AuditEvent[] {
  return Array.from({ length: count }, (_, index) => {
    const sector = SECTORS[index % SECTORS.length] ?? 'finance';
    const denied = index % 17 === 0;
    return {
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
        cursor: index % 3 === 0 ? undefined : `c${index}`,
        accessToken: 'never stored',
      },
      resultCount: denied ? 0 : index % 50,
      outcome: index % 101 === 0 ? 'error' : 'ok',
    };
  });
}

/** COPY text format: tab-separated, `\N` for null, backslash escapes for the four special characters. */
function copyField(value: string | number | null): string {
  if (value === null) return '\\N';
  return String(value).replace(/[\\\t\n\r]/g, (char) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[char] ?? char);
}

function copyLines(rows: readonly QueuedAuditRow[]): Readable {
  const CHUNK = 1000;
  return Readable.from(
    (function* () {
      for (let start = 0; start < rows.length; start += CHUNK) {
        yield rows
          .slice(start, start + CHUNK)
          .map((row) =>
            [row.userId, row.agentId, row.tool, row.sector, row.decision, row.denyReason, row.argsJson, row.resultCount, row.outcome, row.requestId]
              .map(copyField)
              .join('\t'),
          )
          .join('\n') + '\n';
      }
    })(),
  );
}

async function fillQueue(redis: Redis, entries: readonly string[]): Promise<void> {
  for (let start = 0; start < entries.length; start += 5000) {
    await redis.rpush(AUDIT_QUEUE_KEY, ...entries.slice(start, start + 5000));
  }
}

async function truncate(db: DatabasePool): Promise<void> {
  await db.query(sql.unsafe`TRUNCATE audit_log`);
}

async function count(db: DatabasePool): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log`);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const fmt = (value: number) => Math.round(value).toLocaleString('en-US');

async function main(): Promise<void> {
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const database = `pcg_bench_audit_${suffix}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  const databaseUrl = withDatabase(SERVER_URL, database);
  const redis = createRedis({ REDIS_URL, REDIS_PREFIX: `pcg-bench:${suffix}:` }, 'commands', 'bench-audit');
  const log = createLogger({ name: 'bench-audit', level: 'warn' });
  let pools: Database | undefined;
  const copyClient = new pg.Client({ connectionString: databaseUrl });
  try {
    await runMigrations(databaseUrl);
    pools = await createDatabase(databaseUrl, { maximumPoolSize: 2 });
    const db = pools.pool;
    await copyClient.connect();

    const events = makeEvents(ROWS);
    const rows = events.map((event) => buildAuditRow(event).row);
    const entries = rows.map((row) => JSON.stringify(row));
    // The chain key the audit-writer loads from DATA_DIR: 32 random bytes (design 8.4).
    const chainKey = randomBytes(32);
    const writer = createAuditWriter({ db, direct: pools.direct, redis, log, flushMs: FLUSH_MS, chainKey });
    // The writer as the service runs it, started (so a full batch has the next one read ahead) and kept for
    // every run, so its reader thread starts once, as in the service; its timer is not reached (an hour):
    // each run flushes back to back, as the loop does while a backlog lasts.
    const loop = createAuditWriter({ db, direct: pools.direct, redis, log, flushMs: 3_600_000, chainKey });
    loop.start();

    // The producer half, for reference: record() of every event in one burst (past the default buffer of
    // AUDIT_BUFFER_CAPACITY rows at the full size) and the Lua push, until Redis has acknowledged them all.
    const producer = createAuditProducer({ redis, settings: { AUDIT_QUEUE_CAPACITY: ROWS }, log });
    let started = performance.now();
    for (const event of events) producer.record(event);
    await producer.drain({ timeoutMs: 600_000 });
    const produced = producer.stats();
    const producedDropped = produced.overflow + produced.failed + produced.invalid;
    const produceRate = produced.queued / ((performance.now() - started) / 1000);
    if ((await redis.llen(AUDIT_QUEUE_KEY)) !== produced.queued) throw new Error('the producer counted rows Redis does not hold');
    await redis.del(AUDIT_QUEUE_KEY);

    const writerRates: number[] = [];
    const copyRates: number[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      await truncate(db);
      await fillQueue(redis, entries);
      started = performance.now();
      while ((await loop.flush()).taken > 0);
      writerRates.push(ROWS / ((performance.now() - started) / 1000));
      if ((await count(db)) !== ROWS) throw new Error('the writer did not write every row');

      await truncate(db);
      started = performance.now();
      await pipeline(
        copyLines(rows),
        copyClient.query(
          copyFrom('COPY audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id) FROM STDIN'),
        ),
      );
      copyRates.push(ROWS / ((performance.now() - started) / 1000));
      if ((await count(db)) !== ROWS) throw new Error('COPY did not write every row');
    }

    // One full batch, as the loop takes it, onto a table that already holds rows.
    const flushTimes: number[] = [];
    const batch = entries.slice(0, AUDIT_FLUSH_BATCH_SIZE);
    for (let sample = 0; sample < FLUSH_SAMPLES; sample += 1) {
      await fillQueue(redis, batch);
      started = performance.now();
      const result = await writer.flush();
      flushTimes.push(performance.now() - started);
      if (result.written !== batch.length) throw new Error('the 10,000-row flush did not write every row');
    }

    await loop.close();
    const writerRate = median(writerRates);
    const copyRate = median(copyRates);
    const ratio = writerRate / copyRate;
    const flushMedian = median(flushTimes);
    const flushMax = Math.max(...flushTimes);
    const argsBytes = Math.round(rows.reduce((sum, row) => sum + row.argsJson.length, 0) / rows.length);
    console.log(`\naudit write path: ${fmt(ROWS)} rows (args ~${argsBytes} B each), median of ${RUNS} runs, same database\n`);
    const range = (values: number[]) => `${fmt(Math.min(...values))}-${fmt(Math.max(...values))}`.padStart(15);
    console.log('| path                                   |    rows/s | vs COPY |     runs range |');
    console.log('|----------------------------------------|----------:|--------:|---------------:|');
    console.log(`| audit-writer, keyed chain: queue -> PG | ${fmt(writerRate).padStart(9)} | ${ratio.toFixed(2).padStart(7)} | ${range(writerRates)} |`);
    console.log(`| COPY FROM STDIN (ceiling)              | ${fmt(copyRate).padStart(9)} |    1.00 | ${range(copyRates)} |`);
    console.log(`| (producer: record() -> Redis acked)    | ${fmt(produceRate).padStart(9)} |         |                |`);
    console.log(`\nproducer: ${fmt(produced.queued)} of ${fmt(ROWS)} rows acknowledged by Redis, ${fmt(producedDropped)} dropped` +
      (producedDropped > 0 ? ` (queue overflow ${fmt(produced.overflow)}, buffer or gave up ${fmt(produced.failed)}, invalid ${fmt(produced.invalid)})` : ''));
    console.log(
      `\none flush of ${fmt(batch.length)} rows: median ${flushMedian.toFixed(0)} ms, max ${flushMax.toFixed(0)} ms` +
        ` (${((flushMax / FLUSH_MS) * 100).toFixed(0)}% of the default ${FLUSH_MS} ms interval)`,
    );
    console.log(
      `target writer >= 0.5 x COPY: ${ratio >= 0.5 ? 'met' : 'NOT met'}; 10,000-row flush well inside one interval: ${flushMax < FLUSH_MS / 2 ? 'met' : 'NOT met'}; ` +
        `producer drops nothing while Redis is up: ${producedDropped === 0 ? 'met' : 'NOT met'}`,
    );
  } finally {
    await copyClient.end().catch(() => {});
    await pools?.end();
    await redis.del(AUDIT_QUEUE_KEY).catch(() => {});
    await redis.quit();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
    await admin.end();
  }
}

await runBench('audit', main);
