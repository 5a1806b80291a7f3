import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditQueueDepth } from '@pcg/shared/audit';
import { openDatabase } from '@pcg/shared/db';
import { createRedis } from '@pcg/shared/redis';
import { waitFor } from '@pcg/testkit/testing';
import { seedDemo } from '../../scripts/demo/seed.ts';
import { launchStack, type LaunchedStack } from '../e2e/launched-stack.ts';
import { allStarted } from '../support/all-started.ts';
import { startOwnPostgres, startOwnRedis, type OwnPostgres, type OwnRedis } from '../support/own-stores.ts';
import { servicePid } from './stack-processes.ts';
import { auditDroppedIn, auditWrittenIn, type AuditReading } from './audit-counts.ts';
import { startSteadyLoad, type SteadyLoad } from './steady-load.ts';

/**
 * Two faults at once (issue 35, design 8.4): Redis stops, and 5 s later the gateway is killed with SIGKILL while
 * it holds the rows Redis could not take; Redis comes back empty and the launcher starts the gateway again.
 * Every answered call's row is written or counted, and while the spool had room none is lost.
 */
const RECOVERY_MS = 30_000;
const OUTAGE_MS = 5_000;
const PREFIX = 'pcg-spool-faults:';
/** At most one call each is in flight when the gateway dies: recorded, but its answer never arrives. */
const LOAD_CLIENTS = 3;

let redis: OwnRedis;
let postgres: OwnPostgres;
let stack: LaunchedStack;
let load: SteadyLoad;
const measured: string[] = [];

const auditWritten = () => auditWrittenIn(postgres.databaseUrl);
const auditDropped = () => auditDroppedIn(postgres.databaseUrl);

const auditReading = async (): Promise<AuditReading> => ({ produced: load.answered(), written: await auditWritten(), dropped: await auditDropped() });

/**
 * Holds the load until every answered call is written or counted, nothing is queued in Redis and the record
 * is unchanged over a few flushes; past the bound, what it reads then (so a loss shows as numbers).
 */
async function settledAudit(): Promise<AuditReading> {
  await load.pause();
  const commands = createRedis({ REDIS_URL: redis.url, REDIS_PREFIX: PREFIX }, 'commands', 'fault-test');
  try {
    let last = -1;
    let reading = await auditReading();
    return await waitFor(async () => {
      reading = await auditReading();
      const total = reading.written + reading.dropped;
      const settled = total === last && total >= reading.produced && (await readAuditQueueDepth(commands)) === 0;
      last = total;
      if (!settled) await new Promise((resolve) => setTimeout(resolve, 600));
      return settled ? reading : undefined;
    }, RECOVERY_MS, 'the audit record to settle').catch(() => reading);
  } finally {
    commands.disconnect();
    load.resume();
  }
}

beforeAll(async () => {
  await allStarted([startOwnRedis().then((started) => (redis = started)), startOwnPostgres().then((started) => (postgres = started))]);
  const database = await openDatabase(postgres.databaseUrl);
  await seedDemo(database.pool);
  await database.end();
  stack = await launchStack('spool-faults', { AUDIT_FLUSH_MS: '200', REDIS_PREFIX: PREFIX }, { databaseUrl: postgres.databaseUrl, redisUrl: redis.url });
  const created = await fetch(`${stack.consoleUrl}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'steady', sectors: ['finance'] }) });
  expect(created.status).toBe(201);
  load = startSteadyLoad(stack.mcpUrl, String(((await created.json()) as { key: string }).key), LOAD_CLIENTS);
  await waitFor(() => (load.servedSince(0) > 10 ? true : undefined), RECOVERY_MS, 'the load to start');
}, 120_000);

afterAll(async () => {
  await load?.stop();
  if (stack) await stack.stop();
  await redis?.dispose();
  await postgres?.dispose();
  process.stdout.write(`[faults] ${measured.join('; ')}\n`);
}, 60_000);

describe('the audit spool across two faults at once', () => {
  it('Redis stopped, the gateway killed (kill -9) 5 s later, Redis back empty, the gateway restarted: every answered call has its row, written once, and nothing is lost', async () => {
    const before = await settledAudit();
    const rowsBefore = await auditWritten();
    const readyBefore = stack.output().split('"msg":"gateway ready"').length;

    const stoppedAt = Date.now();
    await redis.stop();
    await waitFor(() => (Date.now() - stoppedAt >= OUTAGE_MS ? true : undefined), OUTAGE_MS * 2, 'the outage to last');
    const answeredWhileAway = load.answered() - before.produced;
    const pid = servicePid(stack.pid, 'gateway');
    expect(pid, 'the gateway is a child of the launcher').toBeDefined();
    process.kill(pid!, 'SIGKILL');
    await redis.start();
    await waitFor(() => (stack.output().split('"msg":"gateway ready"').length > readyBefore ? true : undefined), RECOVERY_MS, 'the gateway ready again');
    const servedFrom = Date.now();
    await waitFor(() => (load.servedSince(servedFrom) > 10 ? true : undefined), RECOVERY_MS, 'the load served again');

    const after = await settledAudit();
    const delta = { produced: after.produced - before.produced, written: after.written - before.written, dropped: after.dropped - before.dropped };
    measured.push(`calls answered while Redis was away, before the kill: ${answeredWhileAway}; produced ${delta.produced}, written ${delta.written}, counted dropped ${delta.dropped}`);
    expect(answeredWhileAway).toBeGreaterThan(0);
    // The spool had room (AUDIT_BUFFER_CAPACITY 50,000): no row is lost, not even a counted one.
    expect(delta.dropped).toBe(0);
    expect(delta.written).toBeGreaterThanOrEqual(delta.produced);
    expect(delta.written).toBeLessThanOrEqual(delta.produced + LOAD_CLIENTS);
    // Each row once: the rows sent again after the restart were not written twice (a call's request id is
    // its session and JSON-RPC id, so two rows with one request id are one call written twice).
    const client = new pg.Client({ connectionString: postgres.databaseUrl });
    await client.connect();
    try {
      const twice = await client.query(`SELECT request_id, tool, count(*)::int AS n FROM (SELECT * FROM audit_log ORDER BY id OFFSET ${rowsBefore}) AS later GROUP BY request_id, tool HAVING count(*) > 1`);
      expect(twice.rows).toEqual([]);
    } finally {
      await client.end();
    }
  }, RECOVERY_MS * 5);
});
