import { hostname } from 'node:os';
import type { Redis } from '../redis/index.ts';
import { readPublishedProcesses } from './metrics-publisher.ts';

/**
 * Whether a process of `service` on this host is alive: it published its metrics snapshot within the last
 * three publish intervals. The snapshot is sent from a timer on the process's event loop, so a process that
 * hangs, has died or cannot reach Redis stops being live. Under compose each container is its own host, so a
 * health check run inside a container asks about that container's process only.
 */
export async function isServiceLiveHere(redis: Redis, service: string, host = hostname(), now = Date.now()): Promise<boolean> {
  const processes = await readPublishedProcesses(redis, now);
  return processes.some((process) => process.service === service && process.instance !== null && process.instance.startsWith(`${host}:`));
}
