import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createMetrics, startMetricsPublisher } from '@pcg/shared/metrics';
import { blockingConnection } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createCapturingLogger, insertTestConnection, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';

// Issue 39's additions to GET /api/status: the overall state and its problems, each process's state,
// version and uptime, the sync jobs that failed in the last 24 hours, and the chain's last verification.
const testEnv = useTestEnvironment();
const packageVersion = (JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as { version: string }).version;
let app: FastifyInstance;

type Status = {
  overall: { state: string; problems: Array<{ problem: string; connectionId?: string; process?: string; message: string }> };
  processes: Array<{ name: string; state: string; version: string | null; uptimeSeconds: number | null; startedAt: string | null }>;
  failedJobs: Array<{ connectionId: string | null; connectionName: string | null; failedAt: string; error: string }>;
  chain: { intact: boolean; verifiedAt: string } | null;
  mcp: { served: boolean | null };
};
const status = async () => (await app.inject({ method: 'GET', url: '/api/status' })).json<Status>();

beforeAll(async () => {
  app = buildApp({ config: loadConfig(consoleConfigSchema, testEnv.env()), log: createCapturingLogger().log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis });
});
afterAll(async () => app.close());

describe('GET /api/status: is everything all right?', () => {
  it('lists each process with its state, version and uptime: this Console from itself, another from the snapshot it publishes', async () => {
    const publisher = startMetricsPublisher({ redis: testEnv.redis, metrics: createMetrics(), service: 'sync-worker', everyMs: 1_000, log: createCapturingLogger().log });
    try {
      const answer = await waitFor(async () => {
        const read = await status();
        return read.processes.some((process) => process.name === 'sync-worker' && process.state === 'running') ? read : undefined;
      }, 5_000, 'the sync-worker snapshot');
      expect(answer.processes.find((process) => process.name === 'console')).toMatchObject({ state: 'running', version: packageVersion });
      expect(answer.processes.find((process) => process.name === 'sync-worker')).toMatchObject({ state: 'running', version: packageVersion });
      expect(answer.processes.find((process) => process.name === 'sync-worker')?.uptimeSeconds).toBeGreaterThanOrEqual(0);
      expect(answer.processes.find((process) => process.name === 'audit-writer')).toEqual({ name: 'audit-writer', state: 'not_seen', version: null, startedAt: null, uptimeSeconds: null });
      expect(answer.overall.problems).toContainEqual(expect.objectContaining({ problem: 'process_not_seen', process: 'audit-writer' }));
      // No gateway heartbeat here: the agent port is not served, which is failing.
      expect(answer.mcp.served).toBe(false);
      expect(answer.overall.state).toBe('failing');
    } finally {
      await publisher.stop();
    }
  });

  it('names a sync job that failed in the last 24 hours by its connection, with its time and error', async () => {
    const connectionId = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant', displayName: 'Cellar hub' });
    const settings = { REDIS_URL: testEnv.env().REDIS_URL ?? '', REDIS_PREFIX: testEnv.env().REDIS_PREFIX ?? '' };
    const queue = new Queue('sync', { connection: blockingConnection(settings, 'test-producer'), prefix: bullmqPrefix(settings) });
    const worker = new Worker('sync', async () => {
      throw new UnrecoverableError('the hub answered 401: the token was refused');
    }, { connection: blockingConnection(settings, 'test-failing-worker'), prefix: bullmqPrefix(settings) });
    try {
      await queue.add('sync', { connectionId, reason: 'manual' });
      const answer = await waitFor(async () => {
        const read = await status();
        return read.failedJobs.length > 0 ? read : undefined;
      }, 10_000, 'the failed job');
      expect(answer.failedJobs).toEqual([{ jobId: expect.any(String), connectionId, connectionName: 'Cellar hub', failedAt: expect.any(String), attempts: 1, error: 'the hub answered 401: the token was refused' }]);
      expect(Date.parse(answer.failedJobs[0]?.failedAt ?? '')).not.toBeNaN();
      expect(answer.overall.problems).toContainEqual(expect.objectContaining({ problem: 'job_failed', connectionId, message: 'A sync of Cellar hub failed in the last 24 hours: the hub answered 401: the token was refused' }));
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  it('says the audit chain is not verified until it is walked, then that it is intact', async () => {
    expect((await status()).chain).toBeNull();
    expect((await status()).overall.problems).toContainEqual(expect.objectContaining({ problem: 'chain_not_verified' }));
    expect((await app.inject({ method: 'GET', url: '/api/audit/verify' })).statusCode).toBe(200);
    const after = await status();
    expect(after.chain).toMatchObject({ intact: true });
    expect(after.overall.problems.map((problem) => problem.problem)).not.toContain('chain_not_verified');
  });
});
