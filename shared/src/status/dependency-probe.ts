import { LATE, within } from '../lifecycle/within.ts';
import type { Redis } from '../redis/index.ts';

/** The stores `GET /api/status` depends on. */
export type Dependency = 'postgres' | 'redis';

/** What one read for the status page gave: its value, or the dependency that kept it from answering. */
export type PartResult<T> = { ok: true; value: T } | { ok: false; down: Dependency };

/** How long one status read may take before its store counts as down; a status page must answer quickly. */
export const STATUS_READ_TIMEOUT_MS = 2_000;

/**
 * Runs one read of the status page, turning a failure or a timeout into "this dependency is down", so that
 * one store being away never takes the whole answer with it.
 */
export async function readPart<T>(down: Dependency, read: () => Promise<T>, timeoutMs = STATUS_READ_TIMEOUT_MS): Promise<PartResult<T>> {
  const part = await within(
    read().then((value): PartResult<T> => ({ ok: true, value }), (): PartResult<T> => ({ ok: false, down })),
    timeoutMs,
  );
  return part === LATE ? { ok: false, down } : part;
}

/** How long a status read waits for a Redis client that is not connected yet (at start, or mid-reconnect). */
export const REDIS_READY_GRACE_MS = 500;

function becomesReady(redis: Redis, withinMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const ready = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      redis.off('ready', ready);
      resolve(false);
    }, withinMs);
    redis.once('ready', ready);
  });
}

/**
 * A read that needs Redis. A client that is not connected gets a short grace (a process just started is
 * still connecting), then the read is refused rather than left waiting in the client's offline queue for
 * a reconnect that may be seconds away.
 */
export async function readRedisPart<T>(redis: Redis, read: () => Promise<T>): Promise<PartResult<T>> {
  if (redis.status !== 'ready' && !(await becomesReady(redis, REDIS_READY_GRACE_MS))) return { ok: false, down: 'redis' };
  return readPart('redis', read);
}
