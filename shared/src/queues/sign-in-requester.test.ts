import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { bullmqPrefix } from '../redis/index.ts';
import { QUEUES } from './job-catalogue.ts';
import { blockingConnection } from './queue-connections.ts';
import { createSignInRequester } from './sign-in-requester.ts';

const testEnv = useTestEnvironment();
const capture = createCapturingLogger('sign-ins');
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
const CODE = 'one-time-code-4711';
const exchange = { provider: 'google', code: CODE, redirectUri: 'http://127.0.0.1:8081/oauth/callback' };
const unanswered = { status: 'refused', reason: 'unreachable', message: 'the sync-worker did not finish the sign-in in time; start the sign-in again' };

describe('the sign-in requester', () => {
  let requester: Awaited<ReturnType<typeof createSignInRequester>>;
  let probe: Queue;
  beforeAll(async () => {
    requester = await createSignInRequester(settings(), capture.log, 400);
    probe = new Queue(QUEUES.signin.name, { connection: blockingConnection(settings(), 'probe'), prefix: bullmqPrefix(settings()) });
  });
  afterAll(async () => {
    await probe.close();
    await requester.close();
  });

  it('answers a sign-in no worker took as unanswered, and takes the job and its code back', async () => {
    expect(await requester.exchange(exchange)).toEqual(unanswered);
    expect(await probe.getJobCounts('waiting', 'active', 'delayed', 'failed')).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0 });
  });

  it('answers a sign-in the worker failed as unanswered, removes the failed job with its code, and never logs the error', async () => {
    const worker = new Worker(
      QUEUES.signin.name,
      async (job) => {
        throw new Error(`could not exchange ${(job.data as { code: string }).code}`);
      },
      { connection: blockingConnection(settings(), 'test-signin-worker'), prefix: bullmqPrefix(settings()) },
    );
    worker.on('error', () => undefined);
    try {
      expect(await requester.exchange(exchange)).toEqual(unanswered);
    } finally {
      await worker.close();
    }
    expect(await probe.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0, completed: 0 });
    expect(capture.lines().join('\n')).not.toContain(CODE);
  });
});
