import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentEventPublisher, createAgentService } from '@pcg/shared/grants';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import type { RunningGateway } from '../src/service.ts';
import { connectAgent, INITIALIZE, rawInitialize, rawMcp, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
});
afterAll(async () => gateway.close());

/** tools/list on a session, with the credential every request carries. */
const listTools = (id: string, key: string) =>
  rawMcp(gateway.address, {
    headers: { 'mcp-session-id': id, authorization: `Bearer ${key}` },
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });

/** The Console's side of a key event: the agents service publishing on the real channel. */
const consoleAgents = () =>
  createAgentService({
    db: testEnv.db,
    events: createAgentEventPublisher(testEnv.redis, { REDIS_PREFIX: testEnv.redisPrefix }),
    log: createCapturingLogger().log,
  });

describe('session ends on key events (spec 3.1, design 4.7)', () => {
  it.each([
    ['revoke', (name: string) => consoleAgents().revoke(name)],
    ['rotate', (name: string) => consoleAgents().rotate(name)],
    ['sector edit', (name: string) => consoleAgents().update(name, { sectors: ['health'] })],
    ['deadline edit', (name: string) => consoleAgents().update(name, { expiresInDays: 30 })],
    ['delete', (name: string) => consoleAgents().remove(name)],
  ])('%s ends the agent\'s live sessions within one second, and only theirs', async (label, act) => {
    const name = `agent-${label.replace(' ', '-')}`;
    const key = await createTestAgent(testEnv.db, { name, sectors: ['finance'] });
    const bystanderKey = await createTestAgent(testEnv.db, { name: `${name}-bystander`, sectors: ['finance'] });
    const { client } = await connectAgent(gateway.address, key);
    const other = await rawInitialize(gateway.address, key);
    const bystander = await rawInitialize(gateway.address, bystanderKey);
    expect((await client.callTool({ name: 'describe_context', arguments: {} })).isError).toBeFalsy();

    await act(name);
    await waitFor(async () => ((await listTools(other, key)).status === 404 ? true : undefined), 1_000, 'the session to end');
    await expect(client.callTool({ name: 'describe_context', arguments: {} })).rejects.toThrow(/404|Unknown session/);
    expect((await listTools(bystander, bystanderKey)).status).toBe(200);
  });

  it('refuses a new session for a revoked key with access denied: revoked, as an audit reason', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'revoked-before', sectors: [] });
    await consoleAgents().revoke('revoked-before');
    const answer = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });
    expect(answer.status).toBe(401);
    expect(answer.json()).toMatchObject({ error: { code: -32001, message: 'Unauthorized', data: 'access denied: revoked' } });
    // The official client shows the refusal text.
    await expect(connectAgent(gateway.address, key)).rejects.toThrow('access denied: revoked');
  });

  it('stops answering at the key\'s expiry instant, without a request to notice it', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'short-lived', sectors: ['finance'], expiresInDays: 1 });
    await testEnv.db.query(sql.unsafe`UPDATE agents SET expires_at = now() + interval '1500 milliseconds' WHERE name = 'short-lived'`);
    const id = await rawInitialize(gateway.address, key);
    expect((await listTools(id, key)).status).toBe(200);
    const ended = await waitFor(() => (gateway.sessions.touch(id) === undefined ? Date.now() : undefined), 5_000, 'the expiry timer');
    const expiresAt = await testEnv.db.oneFirst(sql.unsafe`SELECT (extract(epoch FROM expires_at) * 1000)::float8 AS t FROM agents WHERE name = 'short-lived'`);
    // Timestamps leave the database with millisecond precision (the grant's expiry is that instant), while
    // Postgres keeps microseconds: the instant to compare with is the expiry's millisecond.
    expect(ended).toBeGreaterThanOrEqual(Math.floor(Number(expiresAt)));
    expect((await listTools(id, key)).status).toBe(404);
  });

  it('grants an empty sector list a session that every sector check then denies (spec 5 rule 2)', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'nothing-granted', sectors: [] });
    const { client } = await connectAgent(gateway.address, key);
    const context = JSON.parse(((await client.callTool({ name: 'describe_context', arguments: {} })).content as Array<{ text: string }>)[0]?.text ?? '');
    expect(context.sectors).toEqual([]);
    expect((await client.callTool({ name: 'query', arguments: { object: 'finance.account' } })).isError).toBe(true);
    await client.close();
  });
});

describe('the transport keeps nothing per request (SSE response mode)', () => {
  it('holds no response stream of a burst of calls once they are answered', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'bursty', sectors: ['finance'] });
    const id = await rawInitialize(gateway.address, key);
    const transport = gateway.sessions.touch(id)?.transport;
    let mostOpen = 0;
    const watching = setInterval(() => (mostOpen = Math.max(mostOpen, transport?.openStreams ?? 0)), 1);
    // describe_context reads the store, so each answer comes on a later turn than its request.
    const answers = await Promise.all(Array.from({ length: 200 }, (_, index) =>
      rawMcp(gateway.address, {
        headers: { 'mcp-session-id': id, authorization: `Bearer ${key}` },
        body: { jsonrpc: '2.0', id: index + 1, method: 'tools/call', params: { name: 'describe_context', arguments: {} } },
      })));
    clearInterval(watching);
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    // Each POST's stream is held until its answer ends, and none after.
    expect(mostOpen).toBeGreaterThan(0);
    expect(transport?.openStreams).toBe(0);
  });
});

describe('the 512-session cap (spec 3.2, 8)', () => {
  it('refuses the 513th initialize with 503 -32000 and drops no live session', async () => {
    await gateway.sessions.closeAll('clean slate');
    const fresh = await startTestGateway(testEnv);
    try {
      const key = await createTestAgent(testEnv.db, { name: 'many-sessions', sectors: ['finance'] });
      const ids: string[] = [];
      for (let batch = 0; batch < 16; batch += 1) ids.push(...(await Promise.all(Array.from({ length: 32 }, () => rawInitialize(fresh.address, key)))));
      expect(new Set(ids).size).toBe(512);
      const refused = await rawMcp(fresh.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });
      expect(refused.status).toBe(503);
      expect(refused.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Too many sessions' }, id: 1 });
      const statuses: number[] = [];
      for (let batch = 0; batch < 16; batch += 1) {
        const answers = await Promise.all(ids.slice(batch * 32, batch * 32 + 32).map((id) =>
          rawMcp(fresh.address, { headers: { 'mcp-session-id': id, authorization: `Bearer ${key}` }, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } })));
        statuses.push(...answers.map((answer) => answer.status));
      }
      expect(statuses.every((status) => status === 200)).toBe(true);
      // Ending one session frees one place.
      expect((await rawMcp(fresh.address, { method: 'DELETE', headers: { 'mcp-session-id': ids[0] as string, authorization: `Bearer ${key}` } })).status).toBe(200);
      expect((await rawMcp(fresh.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE })).status).toBe(200);
    } finally {
      await fresh.close();
    }
  }, 60_000);
});
