import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { blockingConnection } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { z } from 'zod';
import { connectionState, insertHubConnection, workerEnv } from './helpers.ts';

const testEnv = useTestEnvironment();
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
const MAIN = path.resolve(import.meta.dirname, '../src/main.ts');
let hub: HomeAssistantDouble;
let queue: Queue;
const children: ChildProcess[] = [];

/** The real sync-worker as its own process, as the launcher runs it. Resolves once it is ready. */
async function startWorkerProcess(): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...testEnv.env(workerEnv({ LOG_LEVEL: 'info', SYNC_LOCK_MS: '1000' })) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => (output.includes('sync-worker ready') ? true : child.exitCode !== null ? Promise.reject(new Error(output)) : undefined), 20_000, 'the worker to start');
  return { child, output: () => output };
}

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'test'), prefix: bullmqPrefix(settings()) });
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await queue?.close();
  await hub?.close();
});

describe('a worker killed in the middle of a sync', () => {
  it('finishes the sync when a worker starts again, with no duplicate rows', async () => {
    const connectionId = await insertHubConnection(testEnv.db, { baseUrl: hub.url, token: hub.token });
    // The sync writes every state, then stalls reading the service catalogue: kill it there.
    const stall = hub.stall('/api/services');
    // At start the worker gives the connection its scheduler, whose first run begins at once.
    const first = await startWorkerProcess();
    await stall.arrived;
    const [active] = await queue.getJobs(['active']);
    const jobId = active?.id ?? '';
    expect(active?.data).toEqual({ connectionId, reason: 'scheduled' });
    const counts = () =>
      testEnv.db.one(sql.type(z.object({ total: z.number(), distinct: z.number() }))`
        SELECT count(*)::int AS total, count(DISTINCT source_id)::int AS distinct FROM home_entities WHERE connection_id = ${connectionId}::uuid`);
    expect(await counts()).toEqual({ total: 9, distinct: 9 });
    first.child.kill('SIGKILL');
    expect(await exited(first.child)).toEqual({ code: null, signal: 'SIGKILL' });
    stall.release();
    expect((await connectionState(testEnv.db, connectionId)).last_synced_at).toBeNull();

    // The second worker finds the scheduler in place (no new run) and takes the dead worker's job up again.
    const second = await startWorkerProcess();
    await waitFor(async () => ((await queue.getJobState(jobId)) === 'completed' ? true : undefined), 20_000, `job ${jobId} to complete`);
    expect(await counts()).toEqual({ total: 9, distinct: 9 });
    const state = await connectionState(testEnv.db, connectionId);
    expect(state.last_synced_at).not.toBeNull();
    expect(state.actions.length).toBeGreaterThan(0);
    expect(state).toMatchObject({ status: 'active', last_error: null });
    // The second worker ran the same job again from the start: states read twice, nothing doubled.
    expect(hub.requestsTo('/api/states')).toHaveLength(2);
    expect((await queue.getJob(jobId))?.returnvalue).toMatchObject({ outcome: 'synced', mode: 'full' });
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 1, failed: 0 });

    second.child.kill('SIGTERM');
    expect(await exited(second.child)).toEqual({ code: 0, signal: null });
    expect(second.output()).toContain('"msg":"stopped"');
  });
});
