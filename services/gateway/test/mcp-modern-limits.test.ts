import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Grant } from '@pcg/shared/grants';
import { createCapturingLogger, createTestAgent, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { toolListing } from '../src/mcp/mcp-server-factory.ts';
import { createModernLane } from '../src/mcp/modern/modern-lane.ts';
import type { ToolDef } from '../src/mcp/tools/tool-types.ts';
import type { RunningGateway } from '../src/service.ts';
import { INITIALIZE, rawMcp, rpcError, startTestGateway } from './gateway-harness.ts';
import { modernCall, modernHeaders, MODERN_META } from './modern-harness.ts';

/** Spec 6 and 8: counted refusal lines, 30 a minute per kind. */
const REFUSALS_RECORDED_A_MINUTE = 30;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let switchedOff: RunningGateway;
let clockOffsetMs = 0;

beforeAll(async () => {
  // The gateway's clock is moved instead of waiting: it decides key deadlines and the refusal cap's windows.
  gateway = await startTestGateway(testEnv, {}, { now: () => new Date(Date.now() + clockOffsetMs) });
  switchedOff = await startTestGateway(testEnv, { MCP_MODERN_ERA: 'false' });
});
afterAll(async () => {
  await switchedOff?.close();
  await gateway?.close();
});
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

const unknownKey = () => `pcg_${randomBytes(32).toString('base64url')}`;
const modernDiscover = (address: string, key: string) =>
  rawMcp(address, { headers: { ...modernHeaders('server/discover'), authorization: `Bearer ${key}` }, body: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } } });

describe('refused modern requests share the refusal cap of initialize (spec 6, 8; design 8.1)', () => {
  it('records 30 refusals of a window across both eras, counts the rest, and writes one summary row when the next window sees a refusal', async () => {
    const window = Math.floor(Date.now() / MINUTE_MS) + 1_000;
    clockOffsetMs = window * MINUTE_MS + 1_000 - Date.now();
    const answers = [];
    for (let i = 0; i < 20; i += 1) answers.push(await rawMcp(gateway.address, { headers: { authorization: `Bearer ${unknownKey()}` }, body: INITIALIZE }));
    for (let i = 0; i < 15; i += 1) answers.push(await modernDiscover(gateway.address, unknownKey()));
    expect(answers.every((answer) => answer.status === 401)).toBe(true);
    const seen: Array<Record<string, unknown>> = [];
    const rows = (atLeast: number) =>
      waitFor(async () => {
        seen.push(...(await takeQueuedAuditRows(testEnv.redis)).filter((row) => row.tool === 'initialize'));
        return seen.length >= atLeast ? seen : undefined;
      }, 10_000, `${atLeast} initialize rows`);
    expect(await rows(REFUSALS_RECORDED_A_MINUTE)).toHaveLength(REFUSALS_RECORDED_A_MINUTE);

    clockOffsetMs += MINUTE_MS;
    expect((await modernDiscover(gateway.address, unknownKey())).status).toBe(401);
    const all = await rows(REFUSALS_RECORDED_A_MINUTE + 2);
    expect(all.slice(REFUSALS_RECORDED_A_MINUTE)).toMatchObject([
      { agentId: null, tool: 'initialize', decision: 'deny', denyReason: 'throttled: 5 initialize denials coalesced' },
      { agentId: null, tool: 'initialize', decision: 'deny', denyReason: 'access denied: unknown agent' },
    ]);
  });
});

describe('the key deadline on the modern lane (spec 3.1: checked on every call)', () => {
  it('serves a key until its expiry instant and refuses the next request after it exactly as an initialize (access denied: expired)', async () => {
    clockOffsetMs = 0;
    const key = await createTestAgent(testEnv.db, { name: 'expiring-modern', sectors: ['finance'], expiresInDays: 1 });
    expect((await modernCall(gateway.address, key, 'tools/call', { name: 'describe_context', arguments: {} })).status).toBe(200);
    clockOffsetMs = 2 * DAY_MS;
    const modern = await modernCall(gateway.address, key, 'tools/call', { name: 'describe_context', arguments: {} }, 1);
    const initialize = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });
    expect(modern.status).toBe(401);
    expect(modern.json()).toEqual(rpcError(-32001, 'Unauthorized', 1, 'access denied: expired'));
    expect(modern.json()).toEqual(initialize.json());
    clockOffsetMs = 0;
  });
});

describe('MCP_MODERN_ERA', () => {
  it('false: a modern request without a session gets spec 7\'s 400 -32000, as any session-less request does', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'era-off', sectors: ['finance'] });
    const discover = await modernDiscover(switchedOff.address, key);
    expect(discover.status).toBe(400);
    expect(discover.json()).toEqual(rpcError(-32000, 'Missing or invalid Mcp-Session-Id', 1));
    const call = await modernCall(switchedOff.address, key, 'tools/call', { name: 'describe_context', arguments: {} }, 2);
    expect(call.status).toBe(400);
    expect(call.json()).toEqual(rpcError(-32000, 'Missing or invalid Mcp-Session-Id', 2));
    // No tool ran.
    expect((await takeQueuedAuditRows(testEnv.redis)).filter((row) => row.tool === 'describe_context')).toEqual([]);
  });

  it('true (the default): the same requests are served', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'era-on', sectors: ['finance'] });
    expect((await modernDiscover(gateway.address, key)).status).toBe(200);
    const call = await modernCall(gateway.address, key, 'tools/call', { name: 'describe_context', arguments: {} }, 2);
    expect(call.status).toBe(200);
    expect(call.json()).toMatchObject({ id: 2, result: { resultType: 'complete', content: [{ type: 'text' }] } });
  });
});

describe('requests in flight on the modern lane stand in for the 512 sessions (spec 8, design 8.1)', () => {
  it('answers the 513th request in flight 503 -32000 Too many sessions with Retry-After, and serves again once one ends', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    // A tool that holds its request open until the test lets it go.
    const holdingTool: ToolDef = {
      name: 'hold',
      title: 'Hold',
      description: 'Waits.',
      inputSchema: z.object({}),
      annotations: {},
      handler: async () => {
        started += 1;
        await released;
        return { held: true };
      },
    };
    const { log } = createCapturingLogger('lane');
    const app = buildApp({ log });
    const lane = createModernLane({
      server: { serviceName: 'lane-test', tools: [holdingTool], listing: toolListing([holdingTool]), log },
      resolveAuthorization: async () => ({ ok: true, grant: { agentId: 1, agentName: 'lane', sectors: [], generation: 1, expiresAt: null } satisfies Grant, validUntil: null }),
      challenge: () => undefined,
      onInitializeRefused: () => undefined,
      maxInFlight: 512,
      log,
    });
    app.post('/mcp', (request, reply) => lane.serve(request, reply));
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const call = (id: number) => modernCall(address, 'any', 'tools/call', { name: 'hold', arguments: {} }, id);
      const held = Array.from({ length: 512 }, (_, i) => call(i));
      await waitFor(async () => (started === 512 ? true : undefined), 20_000, '512 calls in flight');
      const refused = await call(512);
      expect(refused.status).toBe(503);
      expect(refused.json()).toEqual(rpcError(-32000, 'Too many sessions', 512));
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      release();
      expect((await Promise.all(held)).every((answer) => answer.status === 200)).toBe(true);
      await waitFor(async () => (lane.inFlight === 0 ? true : undefined), 5_000, 'the calls to end');
      expect((await call(513)).status).toBe(200);
    } finally {
      release();
      await app.close();
    }
  }, 60_000);
});
