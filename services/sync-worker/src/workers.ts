import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { z } from 'zod';
import { LATE, within } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';
import { blockingConnection, QUEUES, SOURCE_BACKOFF, type JobNameOf, type QueueName } from '@pcg/shared/queues';
import { bullmqPrefix, type RedisSettings } from '@pcg/shared/redis';
import { sourceBackoff } from './run/failure-mapper.ts';

export type JobHandler<Data> = (job: Job, data: Data, token: string | undefined, signal: AbortSignal | undefined) => Promise<unknown>;
type CatalogueJobs = { [Q in QueueName]: (typeof QUEUES)[Q]['jobs'] & Record<JobNameOf<Q>, z.ZodType> };
/** The catalogue's job schemas by queue, typed so that a generic queue and job name index them. */
const CATALOGUE_JOBS: CatalogueJobs = { sync: QUEUES.sync.jobs, live: QUEUES.live.jobs, signin: QUEUES.signin.jobs };
type JobSchemaOf<Q extends QueueName, N extends JobNameOf<Q>> = CatalogueJobs[Q][N];
/** One handler per job name of the catalogue queue, each taking that job's parsed payload: a missing one or a wrong payload does not compile. */
export type QueueHandlers<Q extends QueueName> = { [N in JobNameOf<Q>]: JobHandler<z.output<JobSchemaOf<Q, N>>> };
type Dispatch = (job: Job, token: string | undefined, signal: AbortSignal | undefined) => Promise<unknown>;

function parsedDispatch<Schema extends z.ZodType>(schema: Schema, handler: JobHandler<z.output<Schema>>): Dispatch {
  return async (job, token, signal) => {
    const parsed = schema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`job '${job.name}' carries invalid data`);
    return handler(job, parsed.data, token, signal);
  };
}

function dispatchOf<Q extends QueueName, N extends JobNameOf<Q>>(queue: Q, name: N, handlers: QueueHandlers<Q>): Dispatch {
  return parsedDispatch(CATALOGUE_JOBS[queue][name], handlers[name]);
}

function isJobName<Q extends QueueName>(queue: Q, name: string): name is JobNameOf<Q> {
  return Object.hasOwn(CATALOGUE_JOBS[queue], name);
}

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
export function startQueueWorker<Q extends QueueName>(queue: Q, handlers: QueueHandlers<Q>, options: WorkerOptions): Worker {
  const expected = Object.keys(QUEUES[queue].jobs).sort();
  const given = Object.keys(handlers).sort();
  if (expected.join() !== given.join()) throw new Error(`queue '${queue}' needs handlers for ${expected.join(', ')}; got ${given.join(', ') || 'none'}`);
  const dispatches = new Map<string, Dispatch>();
  for (const name of expected) if (isJobName(queue, name)) dispatches.set(name, dispatchOf(queue, name, handlers));

  const log = options.log.child({ queue });
  const worker = new Worker(
    QUEUES[queue].name,
    async (job, token, signal) => {
      const dispatch = dispatches.get(job.name);
      if (!dispatch) throw new UnrecoverableError(`unknown job '${job.name}' on queue '${queue}'`);
      return dispatch(job, token, signal);
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
 * How long a worker's close may still take once its jobs were cancelled. BullMQ's close waits for its
 * blocking connection to end, which never happens while that connection is reconnecting to a Redis that
 * is away (taskforcesh/bullmq#4656, reproduced with 6.7.0): without a bound the service would hang on
 * SIGTERM until the launcher kills it.
 */
export const WORKER_CLOSE_BOUND_MS = 3_000;

/**
 * Stops a worker gracefully: it takes no new job, and the jobs in hand get `graceMs` to finish; after
 * that they are cancelled, and each processor puts its job back in the queue (see the failure policy).
 * A close that still has not finished `boundMs` later is given up on, logged, and the caller goes on
 * (the process exits after its close, which drops the connections BullMQ could not end).
 */
export async function closeWorkerGracefully(worker: Worker, graceMs: number, log: Logger, boundMs = WORKER_CLOSE_BOUND_MS): Promise<void> {
  const closing = worker.close();
  if ((await within(closing, graceMs)) !== LATE) return;
  worker.cancelAllJobs('shutdown');
  if ((await within(closing, boundMs)) !== LATE) return;
  log.error({ queue: worker.name, graceMs, boundMs }, 'worker did not close (its Redis connection did not end); stopping without it');
}
