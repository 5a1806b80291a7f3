import type { Redis } from '../redis/index.ts';

/** The Redis list rows wait in (under REDIS_PREFIX, which the `commands` client adds). */
export const AUDIT_QUEUE_KEY = 'audit:queue';

/** Where Redis keeps the last sequence number it took from one producer (expires a day after its last push). */
export const auditProducerKey = (producerId: string) => `audit:producer:${producerId}`;

/**
 * Design 4.6: one atomic script, so that producers on several processes can never push the list past
 * its capacity between a length check and a push. It takes a batch of one producer's rows in order, and
 * numbers each row it queues with the producer's next sequence number (the numbers are contiguous per
 * producer, so the writer can tell rows lost with Redis's data from rows never queued).
 * A batch whose answer was lost may be sent again with the same first number: the rows Redis already
 * took are skipped, so no row is queued twice. Each entry arrives with its producer and number already
 * written in (by `pushAuditBatch`): rebuilding every row's string in Lua cost Redis about 11 µs a row.
 * KEYS: queue, producer key. ARGV: capacity, first sequence number, the entries (JSON objects).
 * Returns { already queued by an earlier send, queued now, refused for lack of room }.
 */
const PUSH_BATCH_LUA = `
local first = tonumber(ARGV[2])
local count = #ARGV - 2
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local already = 0
if last >= first then already = math.min(last - first + 1, count) end
local room = tonumber(ARGV[1]) - redis.call('LLEN', KEYS[1])
local take = math.max(0, math.min(room, count - already))
if take > 0 then
  redis.call('RPUSH', KEYS[1], unpack(ARGV, 3 + already, 2 + already + take))
  redis.call('SET', KEYS[2], string.format('%d', first + already + take - 1), 'EX', 86400)
end
return { already, take, count - already - take }
`;

type AuditRedis = Redis & {
  pcgAuditPushBatch(queueKey: string, producerKey: string, capacity: string, firstSeq: string, ...entries: string[]): Promise<number[]>;
};

/** Defines the script on the client once (ioredis sends EVALSHA, loading the script when Redis lacks it). */
function withAuditScripts(redis: Redis): AuditRedis {
  if (!('pcgAuditPushBatch' in redis)) redis.defineCommand('pcgAuditPushBatch', { numberOfKeys: 2, lua: PUSH_BATCH_LUA });
  return redis as AuditRedis;
}

export type PushBatchResult = {
  /** Rows at the head of the batch that Redis already held from an earlier send. */
  already: number;
  /** Rows queued by this send. */
  queued: number;
  /** Rows at the tail refused because the queue was full. */
  refused: number;
};

/**
 * Pushes one producer's serialised rows (each a JSON object) in order, as many as the queue has room for;
 * the rows are numbered from `firstSeq`, each entry being its row with `producer` and `seq` added.
 */
export async function pushAuditBatch(
  redis: Redis,
  batch: { producerId: string; firstSeq: number; rows: readonly string[]; capacity: number },
): Promise<PushBatchResult> {
  const producer = `,"producer":${JSON.stringify(batch.producerId)},"seq":`;
  const entries = batch.rows.map((row, index) => `${row.slice(0, -1)}${producer}${batch.firstSeq + index}}`);
  const [already = 0, queued = 0, refused = 0] = await withAuditScripts(redis).pcgAuditPushBatch(
    AUDIT_QUEUE_KEY,
    auditProducerKey(batch.producerId),
    String(batch.capacity),
    String(batch.firstSeq),
    ...entries,
  );
  return { already, queued, refused };
}

/**
 * Takes up to `max` rows off the head of the queue in one atomic LPOP: each row goes to exactly one
 * writer, and once taken it is the writer's alone (written once, or dropped; never pushed back).
 */
export async function takeAuditBatch(redis: Redis, max: number): Promise<string[]> {
  return (await redis.lpop(AUDIT_QUEUE_KEY, max)) ?? [];
}

/** Rows waiting in the queue now, for `GET /api/status`. */
export async function readAuditQueueDepth(redis: Redis): Promise<number> {
  return redis.llen(AUDIT_QUEUE_KEY);
}
