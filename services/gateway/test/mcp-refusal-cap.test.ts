import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestAgent, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import type { RunningGateway } from '../src/service.ts';
import { INITIALIZE, messageOf, rawInitialize, rawMcp, startTestGateway } from './gateway-harness.ts';

/** Spec 6 and 8: counted refusal lines, 30 a minute per kind. */
const REFUSALS_RECORDED_A_MINUTE = 30;
const MINUTE_MS = 60_000;
// The gateway's clock is moved instead of waiting a minute: it decides the refusal cap's windows.
const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let clockOffsetMs = 0;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv, {}, { now: () => new Date(Date.now() + clockOffsetMs) });
});
afterAll(async () => gateway.close());
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

/** A key shaped like an agent key that no grant holds (so it is looked up, then refused). */
const unknownKey = () => `pcg_${randomBytes(32).toString('base64url')}`;
const initializeWith = (key: string) => rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });

/** Runs `count` calls, `width` at a time. */
async function inBatches<T>(count: number, width: number, call: (n: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += width) {
    results.push(...(await Promise.all(Array.from({ length: Math.min(width, count - start) }, (_, i) => call(start + i)))));
  }
  return results;
}

/** Every initialize row queued so far, collected across polls. */
function initializeRows() {
  const seen: Array<Record<string, unknown>> = [];
  return async (atLeast: number) =>
    waitFor(async () => {
      seen.push(...(await takeQueuedAuditRows(testEnv.redis)).filter((row) => row.tool === 'initialize'));
      return seen.length >= atLeast ? seen : undefined;
    }, 10_000, `${atLeast} initialize rows`);
}

describe('the refusal cap on initialize (spec 6, 8: 30 a minute, then a summary row)', () => {
  it('records the first 30 refusals of a window, counts the rest, and writes the summary when the next window sees a refusal', async () => {
    // Start one second into a fresh window of the gateway's clock, so 35 refusals all fall in it.
    const window = Math.floor(Date.now() / MINUTE_MS) + 1_000;
    clockOffsetMs = window * MINUTE_MS + 1_000 - Date.now();
    const answers = await inBatches(REFUSALS_RECORDED_A_MINUTE + 5, 10, () => initializeWith(unknownKey()));
    expect(answers.every((answer) => answer.status === 401)).toBe(true);
    const rows = initializeRows();
    const first = await rows(REFUSALS_RECORDED_A_MINUTE);
    expect(first).toHaveLength(REFUSALS_RECORDED_A_MINUTE);
    expect(first.every((row) => row.decision === 'deny' && row.denyReason === 'access denied: unknown agent' && row.agentId === null)).toBe(true);

    clockOffsetMs += MINUTE_MS;
    expect((await initializeWith(unknownKey())).status).toBe(401);
    const all = await rows(REFUSALS_RECORDED_A_MINUTE + 2);
    expect(all.slice(REFUSALS_RECORDED_A_MINUTE)).toMatchObject([
      { agentId: null, tool: 'initialize', decision: 'deny', denyReason: 'throttled: 5 initialize denials coalesced' },
      { agentId: null, tool: 'initialize', decision: 'deny', denyReason: 'access denied: unknown agent' },
    ]);
  });
});

describe('no lockout and no rate limit on a wrong key or the tool path (spec 5 rule 9, spec 8)', () => {
  it('lets the right key connect at once after 100 wrong-key initializes', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'after-wrong-keys', sectors: ['finance'] });
    const wrong = unknownKey();
    const refused = await inBatches(100, 20, () => initializeWith(wrong));
    expect(refused.every((answer) => answer.status === 401)).toBe(true);
    const right = await initializeWith(key);
    expect(right.status).toBe(200);
    expect(right.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers all of 300 rapid tool calls on one session', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'rapid-calls', sectors: ['finance'] });
    const id = await rawInitialize(gateway.address, key);
    const answers = await inBatches(300, 30, (n) =>
      rawMcp(gateway.address, {
        headers: { 'mcp-session-id': id, authorization: `Bearer ${key}` },
        body: { jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'describe_context', arguments: {} } },
      }));
    expect(answers.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
    const results = answers.map((answer) => messageOf(answer.text) as { id: number; result: { isError?: boolean } });
    expect(results.filter((message) => message.result.isError === true)).toEqual([]);
    expect(results.map((message) => message.id).sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, n) => n));
  }, 60_000);
});
