import { describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../src/config.ts';
import { startSyncWorker } from '../src/service.ts';
import { workerEnv } from './helpers.ts';

const testEnv = useTestEnvironment();

describe('sync-worker service', () => {
  it('starts against the database and Redis and closes its connections', async () => {
    const worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv())), createCapturingLogger().log);
    expect(worker.address).toContain(testEnv.redisPrefix);
    await worker.close();
    await waitFor(() => (worker.redis.status === 'end' ? true : undefined), 2_000, 'redis to close');
  });

  it('fails to start when the database does not answer', async () => {
    const config = loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv({ DATABASE_URL: 'postgres://postgres:postgres@127.0.0.1:1/pcg' })));
    await expect(startSyncWorker(config, createCapturingLogger().log)).rejects.toThrow();
  });
});
