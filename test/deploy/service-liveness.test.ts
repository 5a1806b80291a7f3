import { execFile } from 'node:child_process';
import { hostname } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createMetrics, isServiceLiveHere, METRICS_SNAPSHOTS_KEY, startMetricsPublisher } from '@pcg/shared/metrics';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';

// Issue 42: compose health-checks the two services without a port (audit-writer, sync-worker) by their own
// liveness: `node scripts/healthcheck.ts <service>`, run inside the service's container, reads whether that
// container's process keeps publishing its metrics snapshot to Redis.
const testEnv = useTestEnvironment();
const script = path.resolve(import.meta.dirname, '../../scripts/healthcheck.ts');

/** The health check as compose runs it: its exit status (0 healthy, 1 not). */
async function healthcheck(service: string): Promise<number> {
  try {
    await promisify(execFile)(process.execPath, [script, service], { env: { ...process.env, ...testEnv.env() }, timeout: 20_000 });
    return 0;
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
}

describe('the health check of a service without a port', () => {
  it('passes while the service publishes its snapshot from this host, and fails for a service that does not, or once it stopped', async () => {
    const publisher = startMetricsPublisher({ redis: testEnv.redis, metrics: createMetrics(), service: 'sync-worker', everyMs: 1_000, log: createCapturingLogger().log });
    try {
      await expect.poll(() => isServiceLiveHere(testEnv.redis, 'sync-worker'), { timeout: 5_000 }).toBe(true);
      expect(await healthcheck('sync-worker')).toBe(0);
      expect(await healthcheck('audit-writer')).toBe(1);
    } finally {
      await publisher.stop();
    }
    expect(await healthcheck('sync-worker')).toBe(1);
  });

  it('fails for a process that stopped publishing (a hung or dead one) and for one in another container', async () => {
    const publisher = startMetricsPublisher({ redis: testEnv.redis, metrics: createMetrics(), service: 'audit-writer', everyMs: 1_000, log: createCapturingLogger().log });
    try {
      await expect.poll(() => isServiceLiveHere(testEnv.redis, 'audit-writer'), { timeout: 5_000 }).toBe(true);
      // Another container has another host name: its process does not make this one healthy.
      expect(await isServiceLiveHere(testEnv.redis, 'audit-writer', `not-${hostname()}`)).toBe(false);
      // Three publish intervals without a snapshot: the process is no longer live.
      expect(await isServiceLiveHere(testEnv.redis, 'audit-writer', hostname(), Date.now() + 3_500)).toBe(false);
    } finally {
      await publisher.stop();
    }
    expect(await testEnv.redis.hlen(METRICS_SNAPSHOTS_KEY)).toBe(0);
  });
});
