import { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { blockingConnection } from '@pcg/shared/queues';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { freePort } from '../../../scripts/local-services/index.ts';
import { closeWorkerGracefully } from '../src/workers.ts';

const testEnv = useTestEnvironment();

/** How long the test waits for a close before calling it hung: far past the grace and bound given below. */
const HUNG_AFTER_MS = 15_000;

async function settles(closing: Promise<void>): Promise<'closed' | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), HUNG_AFTER_MS)));
  try {
    return await Promise.race([closing.then(() => 'closed' as const), hung]);
  } finally {
    clearTimeout(timer);
  }
}

function workerOn(redisUrl: string): Worker {
  const worker = new Worker('close-probe', async () => undefined, { connection: blockingConnection({ REDIS_URL: redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'close-probe') });
  worker.on('error', () => undefined);
  return worker;
}

describe('closing a queue worker', () => {
  it('stops waiting for a worker whose Redis does not answer, and says so', async () => {
    // Nothing listens there: BullMQ's own close waits for its blocking connection to end, which never does.
    const worker = workerOn(`redis://127.0.0.1:${await freePort()}`);
    // Closed once its connection is reconnecting (before its first attempt fails, a close still ends).
    await new Promise((resolve) => worker.once('error', resolve));
    const { log, lines } = createCapturingLogger('sync-worker');

    expect(await settles(closeWorkerGracefully(worker, 200, log, 500))).toBe('closed');
    expect(lines().some((line) => line.includes('worker did not close'))).toBe(true);
  });

  it('closes a worker whose Redis answers without giving up on it', async () => {
    const worker = workerOn(testEnv.redisUrl);
    await worker.waitUntilReady();
    const { log, lines } = createCapturingLogger('sync-worker');
    let ended = false;
    worker.once('closed', () => (ended = true));

    expect(await settles(closeWorkerGracefully(worker, 200, log, 500))).toBe('closed');
    expect(ended).toBe(true);
    expect(lines().some((line) => line.includes('worker did not close'))).toBe(false);
  });
});
