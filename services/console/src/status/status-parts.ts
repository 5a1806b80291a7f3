import type { Job, Queue } from 'bullmq';
import { PROCESS_STARTED_AT, SERVICE_VERSION } from '@pcg/shared/status';
import type { PublishedProcess } from '@pcg/shared/metrics';

/** The processes `npm start` runs (design 1), in the order the Status screen lists them. */
export const PROCESS_NAMES = ['console', 'gateway', 'sync-worker', 'audit-writer'] as const;

export type ProcessState = { name: string; state: 'running' | 'not_seen'; version: string | null; startedAt: string | null; uptimeSeconds: number | null };

/**
 * Each process's state, version and uptime: this Console from itself, the others from the snapshots they
 * publish every few seconds (a stopped or dead process has none that is fresh). Several instances of one
 * service are listed each.
 */
export function processStates(published: readonly PublishedProcess[], now: number): ProcessState[] {
  const uptime = (startedAt: number | null) => (startedAt === null ? null : Math.max(0, Math.floor((now - startedAt) / 1000)));
  const at = (startedAt: number | null) => (startedAt === null ? null : new Date(startedAt).toISOString());
  return PROCESS_NAMES.flatMap((name): ProcessState[] => {
    if (name === 'console') return [{ name, state: 'running', version: SERVICE_VERSION, startedAt: at(PROCESS_STARTED_AT), uptimeSeconds: uptime(PROCESS_STARTED_AT) }];
    const seen = published.filter((process) => process.service === name);
    if (seen.length === 0) return [{ name, state: 'not_seen', version: null, startedAt: null, uptimeSeconds: null }];
    return seen.map((process) => ({ name, state: 'running', version: process.version, startedAt: at(process.startedAt), uptimeSeconds: uptime(process.startedAt) }));
  });
}

export type FailedJob = { jobId: string; connectionId: string | null; connectionName: string | null; failedAt: string; attempts: number; error: string };

export const FAILED_JOBS_WINDOW_MS = 24 * 3600 * 1000;
/** The newest failed sync jobs read (the queue keeps up to 1,000 for a week). */
const FAILED_JOBS_READ = 200;

/** Sync jobs that failed for good in the last 24 hours, newest first, named by their connection. */
export async function recentFailedSyncJobs(queue: Pick<Queue, 'getJobs'>, names: ReadonlyMap<string, string>, now: number): Promise<FailedJob[]> {
  const jobs = (await queue.getJobs(['failed'], 0, FAILED_JOBS_READ - 1, false)) as Array<Job | undefined>;
  return jobs
    .flatMap((job): FailedJob[] => {
      if (!job?.finishedOn || now - job.finishedOn > FAILED_JOBS_WINDOW_MS) return [];
      const connectionId = typeof (job.data as { connectionId?: unknown })?.connectionId === 'string' ? (job.data as { connectionId: string }).connectionId : null;
      const known = connectionId !== null && names.has(connectionId);
      return [
        {
          jobId: String(job.id),
          connectionId: known ? connectionId : null,
          connectionName: known ? (names.get(connectionId) ?? null) : null,
          failedAt: new Date(job.finishedOn).toISOString(),
          attempts: job.attemptsMade,
          error: job.failedReason || 'no reason recorded',
        },
      ];
    })
    .sort((a, b) => b.failedAt.localeCompare(a.failedAt));
}
