import { beforeEach, describe, expect, it } from 'vitest';
import { createRedis } from '../redis/index.ts';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import {
  createRefusalThrottle,
  throttleStateKey,
  throttleSummaryText,
  type RefusalKind,
} from './audit-throttle.ts';
import type { AuditEvent, AuditRecorder } from './audit-types.ts';

const testEnv = useTestEnvironment();
const MINUTE = 60_000;
/** Spec 6 and 8: counted refusal lines, 30 a minute per kind. */
const REFUSALS_RECORDED_A_MINUTE = 30;
/** A minute boundary, so that windows are easy to reason about. */
const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);

function refusal(tool = 'initialize'): AuditEvent {
  return { agentId: null, tool, sector: null, decision: 'deny', denyReason: 'access denied: unknown agent', outcome: 'error' };
}

/** A recorder that keeps what it is given, and a clock the test moves. */
function harness() {
  const recorded: AuditEvent[] = [];
  const recorder = { record: (event: AuditEvent) => void recorded.push(event) } satisfies AuditRecorder;
  const clock = { now: T0 };
  const throttle = createRefusalThrottle({ redis: testEnv.redis, recorder, log: createCapturingLogger().log, now: () => clock.now });
  const refuse = async (count: number, kind: RefusalKind = 'initialize', tool?: string) => {
    for (let index = 0; index < count; index += 1) await throttle.check(kind, refusal(tool));
  };
  const summaries = () => recorded.filter((event) => event.denyReason?.startsWith('throttled:'));
  return { recorded, clock, throttle, refuse, summaries };
}

beforeEach(async () => {
  await testEnv.redis.del(throttleStateKey('initialize'), throttleStateKey('bridge'));
});

describe('the refusal throttle (spec 6)', () => {
  it('uses the summary texts of spec 6', () => {
    expect(throttleSummaryText('initialize', 7)).toBe('throttled: 7 initialize denials coalesced');
    expect(throttleSummaryText('bridge', 3)).toBe('throttled: 3 further bridge denials suppressed');
  });

  it('records the first 30 refusals of a minute and only counts the rest', async () => {
    const { recorded, refuse, throttle } = harness();
    await refuse(REFUSALS_RECORDED_A_MINUTE);
    expect(recorded).toHaveLength(REFUSALS_RECORDED_A_MINUTE);
    expect(await throttle.check('initialize', refusal())).toEqual({ recorded: false, summarized: 0 });
    await refuse(10);
    expect(recorded).toHaveLength(REFUSALS_RECORDED_A_MINUTE);
  });

  it('writes the summary at the start of the next window, before that window\'s first refusal, and only then', async () => {
    const { recorded, clock, refuse, throttle, summaries } = harness();
    await refuse(45);
    clock.now = T0 + MINUTE - 1;
    await refuse(5);
    expect(summaries()).toEqual([]);

    clock.now = T0 + MINUTE + 5_000;
    expect(await throttle.check('initialize', refusal())).toEqual({ recorded: true, summarized: 20 });
    expect(recorded).toHaveLength(32);
    expect(recorded[30]).toEqual({
      agentId: null,
      tool: 'initialize',
      sector: null,
      decision: 'deny',
      denyReason: 'throttled: 20 initialize denials coalesced',
      args: { suppressed: 20, windowStartedAt: '2026-03-01T10:00:00.000Z' },
      resultCount: 0,
      outcome: 'error',
    });
    expect(recorded[31]?.denyReason).toBe('access denied: unknown agent');

    // The summary is written once; the new window starts with its own 30.
    await refuse(29);
    expect(summaries()).toHaveLength(1);
    expect(recorded).toHaveLength(61);
  });

  it('writes no summary while no refusal arrives, and the one owed when the next refusal comes much later', async () => {
    const { clock, refuse, summaries } = harness();
    await refuse(33);
    clock.now = T0 + 10 * MINUTE;
    expect(summaries()).toEqual([]);
    await refuse(1);
    expect(summaries().map((event) => event.denyReason)).toEqual(['throttled: 3 initialize denials coalesced']);
  });

  it('writes no summary after a window that stayed within the cap', async () => {
    const { clock, refuse, summaries } = harness();
    await refuse(30);
    clock.now = T0 + MINUTE;
    await refuse(1);
    expect(summaries()).toEqual([]);
  });

  it('keeps the two kinds apart', async () => {
    const { clock, recorded, refuse, summaries } = harness();
    await refuse(32, 'initialize');
    await refuse(35, 'bridge', 'authorize');
    expect(recorded).toHaveLength(60);
    clock.now = T0 + MINUTE;
    await refuse(1, 'bridge', 'authorize');
    expect(summaries()).toEqual([expect.objectContaining({ tool: 'authorize', denyReason: 'throttled: 5 further bridge denials suppressed' })]);
    await refuse(1, 'initialize');
    expect(summaries().map((event) => event.denyReason)).toEqual([
      'throttled: 5 further bridge denials suppressed',
      'throttled: 2 initialize denials coalesced',
    ]);
  });

  it('shares one cap between gateway instances (the window lives in Redis)', async () => {
    const other = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    try {
      const recorded: AuditEvent[] = [];
      const recorder = { record: (event: AuditEvent) => void recorded.push(event) } satisfies AuditRecorder;
      const instances = [testEnv.redis, other].map((redis) =>
        createRefusalThrottle({ redis, recorder, log: createCapturingLogger().log, now: () => T0 }),
      );
      await Promise.all(Array.from({ length: 40 }, (_, index) => instances[index % 2]?.check('initialize', refusal())));
      expect(recorded).toHaveLength(30);
    } finally {
      other.disconnect();
    }
  });

  it('counts a refusal from an instance whose clock is a little behind in the current window', async () => {
    const { clock, refuse, summaries } = harness();
    clock.now = T0 + MINUTE;
    await refuse(31);
    clock.now = T0 + MINUTE - 500;
    await refuse(1);
    expect(summaries()).toEqual([]);
    clock.now = T0 + 2 * MINUTE;
    await refuse(1);
    expect(summaries().map((event) => event.denyReason)).toEqual(['throttled: 2 initialize denials coalesced']);
  });

  it('records off the response path with record(), and drain() waits for it', async () => {
    const { recorded, throttle } = harness();
    expect(throttle.record('initialize', refusal())).toBeUndefined();
    await throttle.drain();
    expect(recorded).toHaveLength(1);
  });
});

describe('the refusal throttle, configured and failing', () => {
  it('takes another cap and window length, and dates a summary by the window it covers', async () => {
    const recorded: AuditEvent[] = [];
    const clock = { now: T0 + 2_500 };
    const throttle = createRefusalThrottle({
      redis: testEnv.redis,
      recorder: { record: (event) => void recorded.push(event) },
      log: createCapturingLogger().log,
      now: () => clock.now,
      cap: 2,
      windowMs: 1_000,
    });
    const decisions = [];
    for (let index = 0; index < 4; index += 1) decisions.push(await throttle.check('bridge', refusal('authorize')));
    expect(decisions).toEqual([
      { recorded: true, summarized: 0 },
      { recorded: true, summarized: 0 },
      { recorded: false, summarized: 0 },
      { recorded: false, summarized: 0 },
    ]);
    clock.now = T0 + 2_999;
    expect(await throttle.check('bridge', refusal('authorize'))).toEqual({ recorded: false, summarized: 0 });
    clock.now = T0 + 3_000;
    expect(await throttle.check('bridge', refusal('authorize'))).toEqual({ recorded: true, summarized: 3 });
    expect(recorded.map((event) => event.denyReason)).toEqual([
      'access denied: unknown agent',
      'access denied: unknown agent',
      'throttled: 3 further bridge denials suppressed',
      'access denied: unknown agent',
    ]);
    expect(recorded[2]?.args).toEqual({ suppressed: 3, windowStartedAt: '2026-03-01T10:00:02.000Z' });
  });

  it('windows whole minutes of the system clock when given none', async () => {
    const throttle = createRefusalThrottle({ redis: testEnv.redis, recorder: { record: () => undefined }, log: createCapturingLogger().log });
    const before = Math.floor(Date.now() / MINUTE);
    await throttle.check('initialize', refusal());
    const window = Number(await testEnv.redis.hget(throttleStateKey('initialize'), 'window'));
    expect(window).toBeGreaterThanOrEqual(before);
    expect(window).toBeLessThanOrEqual(Math.floor(Date.now() / MINUTE));
  });

  it('drops a refusal it cannot count when Redis does not answer, logs it, and never throws', async () => {
    const down = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'commands');
    down.disconnect();
    const recorded: AuditEvent[] = [];
    const { log, lines } = createCapturingLogger('audit');
    const throttle = createRefusalThrottle({ redis: down, recorder: { record: (event) => void recorded.push(event) }, log, now: () => T0 });
    expect(await throttle.check('initialize', refusal())).toBeNull();
    throttle.record('bridge', refusal('authorize'));
    await throttle.drain();
    expect(recorded).toEqual([]);
    const logged = lines().map((line) => JSON.parse(line) as { level: number; msg: string; kind: string });
    expect(logged.map(({ level, msg, kind }) => ({ level, msg, kind }))).toEqual([
      { level: 50, msg: '[audit] refusal throttle unavailable — dropped', kind: 'initialize' },
      { level: 50, msg: '[audit] refusal throttle unavailable — dropped', kind: 'bridge' },
    ]);
  });

  it('drain() waits for every decision under way, and returns at once when there is none', async () => {
    const { recorded, throttle } = harness();
    await throttle.drain();
    for (let index = 0; index < 5; index += 1) throttle.record('initialize', refusal());
    await throttle.drain();
    expect(recorded).toHaveLength(5);
    throttle.record('initialize', refusal());
    await throttle.drain();
    expect(recorded).toHaveLength(6);
  });
});
