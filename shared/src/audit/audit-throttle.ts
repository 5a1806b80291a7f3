import type { Logger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import type { AuditEvent, AuditRecorder } from './audit-types.ts';

/**
 * The two capped refusal kinds of spec 6: refused `initialize` calls, and the bridge's cheap refusals
 * (unknown client, mismatched address, stale form). A refused agent key is never a `bridge` refusal:
 * record that one directly.
 */
export const REFUSAL_KINDS = ['initialize', 'bridge'] as const;
export type RefusalKind = (typeof REFUSAL_KINDS)[number];

/** Spec 6 and 8: 30 counted refusal rows a minute per kind. */
export const REFUSAL_CAP = 30;
export const REFUSAL_WINDOW_MS = 60_000;

/** The summary row's deny reason (spec 6, word for word). */
export function throttleSummaryText(kind: RefusalKind, suppressed: number): string {
  return kind === 'initialize'
    ? `throttled: ${suppressed} initialize denials coalesced`
    : `throttled: ${suppressed} further bridge denials suppressed`;
}

export const throttleStateKey = (kind: RefusalKind) => `audit:throttle:${kind}`;

/**
 * One atomic step per refusal on a kind's hash {window, count, suppressed}. The first refusal of a later
 * window hands back the previous window's suppressed count (the summary to write) and starts the new
 * window. A window index lower than the stored one (another instance's clock a little behind) counts
 * in the stored window instead of resetting it.
 * KEYS: the state hash. ARGV: window index, cap. Returns {admitted 1|0, suppressed in the closed window, its index}.
 */
const THROTTLE_LUA = `
local window = tonumber(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'window', 'count', 'suppressed')
local stored = tonumber(state[1])
local summary = 0
local closed = -1
if stored == nil or window > stored then
  summary = tonumber(state[3]) or 0
  closed = stored or -1
  redis.call('HSET', KEYS[1], 'window', ARGV[1], 'count', 0, 'suppressed', 0)
end
local count = redis.call('HINCRBY', KEYS[1], 'count', 1)
if count <= tonumber(ARGV[2]) then
  return {1, summary, closed}
end
redis.call('HINCRBY', KEYS[1], 'suppressed', 1)
return {0, summary, closed}
`;

type ThrottleRedis = Redis & {
  pcgAuditThrottle(stateKey: string, window: string, cap: string): Promise<[number, number, number]>;
};

function withThrottleScript(redis: Redis): ThrottleRedis {
  if (!('pcgAuditThrottle' in redis)) redis.defineCommand('pcgAuditThrottle', { numberOfKeys: 1, lua: THROTTLE_LUA });
  return redis as ThrottleRedis;
}

export type RefusalThrottleDeps = {
  /** A `commands` client. The windows live in Redis so that every gateway instance shares one cap. */
  redis: Redis;
  recorder: AuditRecorder;
  log: Logger;
  /** Milliseconds since the epoch; default `Date.now`. Windows are whole minutes of this clock. */
  now?: () => number;
  /** Default `REFUSAL_CAP` (30). */
  cap?: number;
  /** Default `REFUSAL_WINDOW_MS` (one minute). */
  windowMs?: number;
};

export type RefusalDecision = {
  /** Whether this refusal got its own row (one of the window's first `cap`). */
  recorded: boolean;
  /** Refusals suppressed in an earlier window and summarised in a row written just before; 0 when none. */
  summarized: number;
};

export type RefusalThrottle = {
  /** For a response path: decides and records off the path; never throws. */
  record(kind: RefusalKind, event: AuditEvent): void;
  /** The same, awaitable. Resolves to null when Redis did not answer (the refusal is then lost, and logged). */
  check(kind: RefusalKind, event: AuditEvent): Promise<RefusalDecision | null>;
  /** Resolves once every decision started so far has settled. */
  drain(): Promise<void>;
};

/**
 * Spec 6's refusal cap. Each kind gets `cap` refusal rows per fixed window; past the cap a refusal is
 * only counted. When a refusal arrives in a later window and the last window suppressed some, a summary
 * row (`throttled: <n> …`) is recorded first. No refusal, no summary: nothing runs on a timer.
 */
export function createRefusalThrottle(deps: RefusalThrottleDeps): RefusalThrottle {
  const { redis, recorder, log } = deps;
  const now = deps.now ?? Date.now;
  const cap = deps.cap ?? REFUSAL_CAP;
  const windowMs = deps.windowMs ?? REFUSAL_WINDOW_MS;
  const pending = new Set<Promise<unknown>>();

  async function check(kind: RefusalKind, event: AuditEvent): Promise<RefusalDecision | null> {
    const window = Math.floor(now() / windowMs);
    let answer: [number, number, number];
    try {
      answer = await withThrottleScript(redis).pcgAuditThrottle(throttleStateKey(kind), String(window), String(cap));
    } catch (error) {
      log.error({ err: error, kind }, '[audit] refusal throttle unavailable — dropped');
      return null;
    }
    const [admitted, summarized, closedWindow] = answer;
    if (summarized > 0) {
      recorder.record({
        agentId: null,
        tool: event.tool,
        sector: null,
        decision: 'deny',
        denyReason: throttleSummaryText(kind, summarized),
        args: { suppressed: summarized, windowStartedAt: new Date(closedWindow * windowMs).toISOString() },
        resultCount: 0,
        outcome: event.outcome,
      });
    }
    if (admitted === 1) recorder.record(event);
    return { recorded: admitted === 1, summarized };
  }

  return {
    check,
    record(kind, event) {
      const promise = check(kind, event);
      pending.add(promise);
      void promise.finally(() => pending.delete(promise));
    },
    async drain() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}
