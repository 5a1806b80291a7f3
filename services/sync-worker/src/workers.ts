import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from '@pcg/shared/logger';
import { blockingConnection, jobSchema, QUEUES, SOURCE_BACKOFF, type QueueName } from '@pcg/shared/queues';
import { bullmqPrefix, type RedisSettings } from '@pcg/shared/redis';
import { sourceBackoff } from './run/failure-mapper.ts';

export type JobHandler = (job: Job, data: never, token: string | undefined, signal: AbortSignal | undefined) => Promise<unknown>;
export type QueueHandlers = Record<string, JobHandler>;

export type WorkerOptions = {
  settings: RedisSettings;
  log: Logger;
  concurrency: number;
  lockMs: number;
  backoffMs: number;
};

/**
 * One BullMQ worker for a catalogue queue. Every job name of the catalogue must have exactly one handler
 * (checked here, at boot); each job's data is parsed with its catalogue schema before dispatch, and a job
 * name the catalogue does not know fails for good rather than being skipped.
 */
export function startQueueWorker(queue: QueueName, handlers: QueueHandlers, options: WorkerOptions): Worker {
  const expected = Object.keys(QUEUES[queue].jobs).sort();
  const given = Object.keys(handlers).sort();
  if (expected.join() !== given.join()) throw new Error(`queue '${queue}' needs handlers for ${expected.join(', ')}; got ${given.join(', ') || 'none'}`);

  const log = options.log.child({ queue });
  const worker = new Worker(
    QUEUES[queue].name,
    async (job, token, signal) => {
      const handler = handlers[job.name];
      if (!handler) throw new UnrecoverableError(`unknown job '${job.name}' on queue '${queue}'`);
      const parsed = jobSchema(queue, job.name).safeParse(job.data);
      if (!parsed.success) throw new UnrecoverableError(`job '${job.name}' carries invalid data`);
      return handler(job, parsed.data as never, token, signal);
    },
    {
      connection: blockingConnection(options.settings, `${queue}-worker`),
      prefix: bullmqPrefix(options.settings),
      concurrency: options.concurrency,
      lockDuration: options.lockMs,
      stalledInterval: options.lockMs,
      settings: {
        backoffStrategy: (attemptsMade: number, type?: string, error?: Error) => {
          if (type !== SOURCE_BACKOFF) throw new Error(`unknown backoff type '${type}'`);
          return sourceBackoff(options.backoffMs)(attemptsMade, error);
        },
      },
    },
  );
  worker.on('error', (error) => log.warn({ err: error }, 'worker connection error'));
  worker.on('failed', (job, error) => {
    if (job) log.warn({ jobId: job.id, name: job.name, attemptsMade: job.attemptsMade, reason: error.message }, 'job failed');
  });
  return worker;
}

/**
 * Stops a worker gracefully: it takes no new job, and the jobs in hand get `graceMs` to finish; after
 * that they are cancelled, and each processor puts its job back in the queue (see the failure policy).
 */
export async function closeWorkerGracefully(worker: Worker, graceMs: number): Promise<void> {
  const closing = worker.close();
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<'grace'>((resolve) => (timer = setTimeout(() => resolve('grace'), graceMs)));
  const first = await Promise.race([closing.then(() => 'closed' as const), grace]);
  clearTimeout(timer);
  if (first === 'grace') worker.cancelAllJobs('shutdown');
  await closing;
}
