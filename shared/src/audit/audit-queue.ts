import type { Redis } from '../redis/index.ts';
import type { AuditQueueStatus } from './audit-types.ts';

/** The Redis list rows wait in (under REDIS_PREFIX, which the `commands` client adds). */
export const AUDIT_QUEUE_KEY = 'audit:queue';
/** A hash of drop counters, read by `GET /api/status`. */
export const AUDIT_DROPS_KEY = 'audit:dropped';

/** Fields of the drop-counter hash. */
export const AUDIT_DROP_FIELDS = {
  queueOverflow: 'queue_overflow',
  flushFailed: 'flush_failed',
  unreadable: 'unreadable',
} as const;

/**
 * Design 4.6: one atomic script, so that producers on several processes can never push the list past
 * its capacity between a length check and a push. A refused row is counted in the same step.
 * KEYS: queue, drop counters. ARGV: the row, the capacity. Returns 1 when queued, 0 when dropped.
 */
const ENQUEUE_LUA = `
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  redis.call('HINCRBY', KEYS[2], '${AUDIT_DROP_FIELDS.queueOverflow}', 1)
  return 0
end
redis.call('RPUSH', KEYS[1], ARGV[1])
return 1
`;

type AuditRedis = Redis & {
  pcgAuditEnqueue(queueKey: string, dropsKey: string, row: string, capacity: string): Promise<number>;
};

/** Defines the script on the client once (ioredis sends EVALSHA, loading the script when Redis lacks it). */
function withAuditScripts(redis: Redis): AuditRedis {
  if (!('pcgAuditEnqueue' in redis)) redis.defineCommand('pcgAuditEnqueue', { numberOfKeys: 2, lua: ENQUEUE_LUA });
  return redis as AuditRedis;
}

/** Pushes one serialised row unless the queue already holds `capacity` rows. Resolves to whether it was queued. */
export async function enqueueAuditRow(redis: Redis, rowJson: string, capacity: number): Promise<boolean> {
  const queued = await withAuditScripts(redis).pcgAuditEnqueue(AUDIT_QUEUE_KEY, AUDIT_DROPS_KEY, rowJson, String(capacity));
  return queued === 1;
}

/**
 * Takes up to `max` rows off the head of the queue in one atomic LPOP: each row goes to exactly one
 * writer, and once taken it is the writer's alone (written once, or dropped; never pushed back).
 */
export async function takeAuditBatch(redis: Redis, max: number): Promise<string[]> {
  return (await redis.lpop(AUDIT_QUEUE_KEY, max)) ?? [];
}

export async function countAuditDrops(
  redis: Redis,
  reason: keyof typeof AUDIT_DROP_FIELDS,
  rows: number,
): Promise<void> {
  await redis.hincrby(AUDIT_DROPS_KEY, AUDIT_DROP_FIELDS[reason], rows);
}

function counter(value: string | undefined): number {
  const parsed = Number(value ?? 0);
  return Number.isSafeInteger(parsed) ? parsed : 0;
}

/** The queue depth and the drop counters, for `GET /api/status`. */
export async function readAuditQueueStatus(redis: Redis): Promise<AuditQueueStatus> {
  const [queued, drops] = await Promise.all([redis.llen(AUDIT_QUEUE_KEY), redis.hgetall(AUDIT_DROPS_KEY)]);
  return {
    queued,
    dropped: {
      queueOverflow: counter(drops[AUDIT_DROP_FIELDS.queueOverflow]),
      flushFailed: counter(drops[AUDIT_DROP_FIELDS.flushFailed]),
      unreadable: counter(drops[AUDIT_DROP_FIELDS.unreadable]),
    },
  };
}
