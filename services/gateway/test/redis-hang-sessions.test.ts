import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentEventPublisher, createAgentService, type AgentService } from '@pcg/shared/grants';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { startOwnRedis, type OwnRedis } from '../../../test/support/own-stores.ts';
import type { RunningGateway } from '../src/service.ts';
import { rawInitialize, rawMcp, startTestGateway } from './gateway-harness.ts';

/**
 * A hung Redis (SIGSTOP: its connections stay open and nothing is answered) is noticed by the agent-events
 * subscriber's PING deadline, which starts the Postgres fallback (docs/decisions.md, key events while
 * Redis is down). The gateway runs on a Redis of this file's own.
 */
const testEnv = useTestEnvironment();
let redis: OwnRedis;
let gateway: RunningGateway & { logs: () => string[] };
let consoleRedis: Redis;
let agents: AgentService;

/** Issue 12: while Redis is down, a revoke ends the affected sessions within 1 s. */
const BOUND_MS = 1_000;

beforeAll(async () => {
  redis = await startOwnRedis();
  gateway = await startTestGateway(testEnv, { REDIS_URL: redis.url });
  consoleRedis = createRedis({ REDIS_URL: redis.url, REDIS_PREFIX: testEnv.redisPrefix }, 'commands', 'test-console');
  consoleRedis.on('error', () => undefined);
  agents = createAgentService({ db: testEnv.db, events: createAgentEventPublisher(consoleRedis, { REDIS_PREFIX: testEnv.redisPrefix }), log: createCapturingLogger().log });
});
afterAll(async () => {
  redis?.resume();
  await gateway?.close();
  consoleRedis?.disconnect();
  await redis?.dispose();
});

const listTools = (id: string, key: string) =>
  rawMcp(gateway.address, { headers: { 'mcp-session-id': id, authorization: `Bearer ${key}` }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });

const logged = (text: string) => waitFor(() => (gateway.logs().some((line) => line.includes(text)) ? true : undefined), 10_000, `the gateway to log '${text}'`);

describe('a hung Redis (issue 12 item 12, design 4.7)', () => {
  it('is noticed by a missed PONG; a revoke saved meanwhile ends the session within 1 s, and the channel serves again once Redis answers', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'hung-revoked', sectors: ['finance'] });
    const bystanderKey = await createTestAgent(testEnv.db, { name: 'hung-bystander', sectors: ['finance'] });
    const session = await rawInitialize(gateway.address, key);
    const bystander = await rawInitialize(gateway.address, bystanderKey);

    redis.pause();
    await logged('agent events channel not answering');
    const started = Date.now();
    const ended = waitFor(async () => ((await listTools(session, key)).status === 404 ? Date.now() : undefined), BOUND_MS + 4_000, 'the session to end');
    expect((await agents.revoke('hung-revoked')).status).toBe('revoked');
    expect((await ended) - started).toBeLessThan(BOUND_MS);
    expect((await listTools(bystander, bystanderKey)).status).toBe(200);

    redis.resume();
    await logged('agent events channel answers again');
    // One last check, and the poll stops: a key event now ends the bystander's session through the channel.
    await logged('rechecked live sessions');
    await agents.rotate('hung-bystander');
    await waitFor(async () => ((await listTools(bystander, bystanderKey)).status === 404 ? true : undefined), 5_000, 'the rotated session to end');
  });
});
