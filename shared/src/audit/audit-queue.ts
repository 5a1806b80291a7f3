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
 * A producer that keeps its rows until they are written (design 8.4) passes the last number Redis took
 * from it as `expect`: when Redis no longer remembers that far (it lost its data, or the day passed), the
 * script queues nothing and answers `rewind`, so the producer sends again every row not yet written,
 * in order, before any new one (else the writer would count them lost and then skip them as repeats).
 * KEYS: queue, producer key. ARGV: capacity, first sequence number, expect (-1: no check), the entries.
 * Returns { already queued by an earlier send, queued now, refused for lack of room, 1 if rewind }.
 */
const PUSH_BATCH_LUA = `
local first = tonumber(ARGV[2])
local expect = tonumber(ARGV[3])
local count = #ARGV - 3
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if expect >= 0 and last < expect then return { 0, 0, 0, 1 } end
local already = 0
if last >= first then already = math.min(last - first + 1, count) end
local room = tonumber(ARGV[1]) - redis.call('LLEN', KEYS[1])
local take = math.max(0, math.min(room, count - already))
if take > 0 then
  redis.call('RPUSH', KEYS[1], unpack(ARGV, 4 + already, 3 + already + take))
  redis.call('SET', KEYS[2], string.format('%d', first + already + take - 1), 'EX', 86400)
end
return { already, take, count - already - take, 0 }
`;

type AuditRedis = Redis & {
  pcgAuditPushBatch(queueKey: string, producerKey: string, capacity: string, firstSeq: string, expect: string, ...entries: string[]): Promise<number[]>;
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

/** A row's queue entry: its JSON object with the producer and sequence number added. */
export const auditEntry = (row: string, producerId: string, seq: number) => `${row.slice(0, -1)},"producer":${JSON.stringify(producerId)},"seq":${seq}}`;

/**
 * Pushes one producer's serialised rows (each a JSON object) in order, as many as the queue has room for;
 * the rows are numbered from `firstSeq`, each entry being its row with `producer` and `seq` added.
 */
export async function pushAuditBatch(
  redis: Redis,
  batch: { producerId: string; firstSeq: number; rows: readonly string[]; capacity: number },
): Promise<PushBatchResult> {
  const entries = batch.rows.map((row, index) => auditEntry(row, batch.producerId, batch.firstSeq + index));
  const { already, queued, refused } = await pushAuditEntries(redis, { producerId: batch.producerId, firstSeq: batch.firstSeq, entries, capacity: batch.capacity });
  return { already, queued, refused };
}

/**
 * Pushes entries already numbered `firstSeq`, `firstSeq + 1`… (`auditEntry`). `after` is written into the
 * first entry when the row before it in the producer's numbering is not `firstSeq - 1` (it was refused, or
 * the batch is a resend): the writer counts as lost with Redis only numbers it has not seen up to `after`.
 * `expect`: see the script; without it nothing is checked.
 */
export async function pushAuditEntries(
  redis: Redis,
  batch: { producerId: string; firstSeq: number; entries: readonly string[]; capacity: number; expect?: number; after?: number },
): Promise<PushBatchResult & { rewind: boolean }> {
  const entries = batch.after === undefined || batch.entries.length === 0 ? batch.entries : [`${batch.entries[0]!.slice(0, -1)},"after":${batch.after}}`, ...batch.entries.slice(1)];
  const [already = 0, queued = 0, refused = 0, rewind = 0] = await withAuditScripts(redis).pcgAuditPushBatch(
    AUDIT_QUEUE_KEY,
    auditProducerKey(batch.producerId),
    String(batch.capacity),
    String(batch.firstSeq),
    String(batch.expect ?? -1),
    ...entries,
  );
  return { already, queued, refused, rewind: rewind === 1 };
}

/** The last sequence number Redis took from a producer (0 when it remembers none). */
export async function readAuditProducerMark(redis: Redis, producerId: string): Promise<number> {
  return Number((await redis.get(auditProducerKey(producerId))) ?? 0);
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
