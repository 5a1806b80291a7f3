import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { createAgentEventPublisher, createAgentService, type AgentService } from '@pcg/shared/grants';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { createSettingsQueries } from '@pcg/shared/settings';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { startOwnRedis, type OwnRedis } from '../../../test/support/own-stores.ts';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';
import type { RunningGateway } from '../src/service.ts';
import { oauthClient, signIn, waitForBridge } from './bridge-helpers.ts';
import { rawInitialize, rawMcp, startTestGateway } from './gateway-harness.ts';

/**
 * Issue 12 items 3, 12 and 16: while Redis (the agent-events channel) is down, a revoke, a key event and a
 * bridge-chain revocation still end the affected sessions within 1 s, and a grant deleted and re-created
 * under the same name is never taken for the old one. The gateway runs on a Redis of this file's own.
 */
const testEnv = useTestEnvironment();
let redis: OwnRedis;
let gateway: RunningGateway;
/** The Console's Redis connection, on the same (own) server: its publishes fail while it is down. */
let consoleRedis: Redis;
let agents: AgentService;

/** Issue 12: "while Redis is down, a revoke, a key event and a bridge-chain revocation end the affected sessions within 1 s". */
const BOUND_MS = 1_000;

beforeAll(async () => {
  redis = await startOwnRedis();
  gateway = await startTestGateway(testEnv, { REDIS_URL: redis.url });
  consoleRedis = createRedis({ REDIS_URL: redis.url, REDIS_PREFIX: testEnv.redisPrefix }, 'commands', 'test-console');
  consoleRedis.on('error', () => undefined);
  agents = createAgentService({ db: testEnv.db, events: createAgentEventPublisher(consoleRedis, { REDIS_PREFIX: testEnv.redisPrefix }), log: createCapturingLogger().log });
  // The bridge on at this gateway's own address (the origin is known only once it listens).
  await createSettingsQueries(testEnv.db).writePublicOrigin(gateway.address);
  await gateway.bridge.reload();
  await waitForBridge(gateway.address, true);
});
afterEach(async () => redis.start());
afterAll(async () => {
  await redis.start();
  await gateway?.close();
  consoleRedis?.disconnect();
  await redis?.dispose();
});

const listTools = (id: string, key: string) =>
  rawMcp(gateway.address, { headers: { 'mcp-session-id': id, authorization: `Bearer ${key}` }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });

/**
 * Watches the session until it answers 404 Unknown session; resolves with when that was first seen (ms
 * since the epoch). Start it before the act, so a slow act cannot delay the observation.
 */
function sessionEnded(id: string, key: string, timeoutMs = BOUND_MS + 4_000): Promise<number> {
  return waitFor(async () => ((await listTools(id, key)).status === 404 ? Date.now() : undefined), timeoutMs, `session ${id} to end`);
}

/** Stops the own Redis and waits until the gateway's event subscriber has seen it go. */
async function stopRedis(): Promise<void> {
  await redis.stop();
  await waitFor(() => (gateway.redis.status === 'ready' ? undefined : true), 5_000, 'the gateway to notice Redis is down');
}

describe('while Redis is down (issue 12 item 12)', () => {
  it("a revoke made through the agents service is saved and ends the agent's sessions within 1 s; other agents keep theirs", async () => {
    const key = await createTestAgent(testEnv.db, { name: 'outage-revoked', sectors: ['finance'] });
    const bystanderKey = await createTestAgent(testEnv.db, { name: 'outage-bystander', sectors: ['finance'] });
    const session = await rawInitialize(gateway.address, key);
    const bystander = await rawInitialize(gateway.address, bystanderKey);
    await stopRedis();

    const started = Date.now();
    const ended = sessionEnded(session, key);
    const revoked = await agents.revoke('outage-revoked');
    expect(revoked.status).toBe('revoked');
    expect(await testEnv.db.oneFirst(sql.unsafe`SELECT revoked_at IS NOT NULL AS revoked FROM agents WHERE name = 'outage-revoked'`)).toBe(true);
    expect((await ended) - started).toBeLessThan(BOUND_MS);
    expect(gateway.redis.status).not.toBe('ready');
    expect((await listTools(bystander, bystanderKey)).status).toBe(200);
  });

  it('a key rotation ends the sessions of the old key within 1 s', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'outage-rotated', sectors: ['home'] });
    const session = await rawInitialize(gateway.address, key);
    await stopRedis();
    const started = Date.now();
    const ended = sessionEnded(session, key);
    await agents.rotate('outage-rotated');
    expect((await ended) - started).toBeLessThan(BOUND_MS);
  });

  it('deleting an agent and re-creating it under the same name with only home ends the old finance session within 1 s (item 3)', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'outage-recreated', sectors: ['finance'] });
    const bystanderKey = await createTestAgent(testEnv.db, { name: 'outage-recreated-bystander', sectors: ['finance'] });
    const session = await rawInitialize(gateway.address, key);
    const bystander = await rawInitialize(gateway.address, bystanderKey);
    await stopRedis();

    const started = Date.now();
    const ended = sessionEnded(session, key);
    await agents.remove('outage-recreated');
    const { issued } = await agents.createOrRotate({ name: 'outage-recreated', sectors: ['home'] });
    // The old row had generation 0, and so does the new one: only its id tells them apart.
    expect(await testEnv.db.oneFirst(sql.unsafe`SELECT generation FROM agents WHERE name = 'outage-recreated'`)).toBe(0);
    expect((await ended) - started).toBeLessThan(BOUND_MS);
    expect((await listTools(bystander, bystanderKey)).status).toBe(200);

    // The new key opens a session of its own, with home only.
    await redis.start();
    const fresh = await rawInitialize(gateway.address, issued.key);
    const context = await rawMcp(gateway.address, {
      headers: { 'mcp-session-id': fresh, authorization: `Bearer ${issued.key}` },
      body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'describe_context', arguments: {} } },
    });
    expect(context.text).toContain('\\"sectors\\": [\\n    \\"home\\"\\n  ]');
  });
});

/** The sign-in a hosted client runs, ending in a client connected with a bridge access token. */
async function connectThroughBridge(key: string) {
  const { provider, captured } = oauthClient('Outage client');
  const url = new URL(`${gateway.address}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await expect(new Client({ name: 'hosted-agent', version: '1.0.0' }).connect(first)).rejects.toThrow(UnauthorizedError);
  await first.finishAuth(await signIn(captured.authorizationUrl as URL, key));
  const client = new Client({ name: 'hosted-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await client.connect(transport);
  return { client, transport, provider };
}

const exchangeRefresh = (clientId: string, refreshToken: string) =>
  fetch(`${gateway.address}${BRIDGE_PATHS.token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }),
  });

describe('a bridge chain revoked while Redis is down (issue 12 item 16)', () => {
  it('ends the session held by a token of that chain within 1 s of the revocation; a session of another sign-in goes on', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'outage-hosted', sectors: ['home'], expiresInDays: 30 });
    const { client, transport, provider } = await connectThroughBridge(key);
    const other = await connectThroughBridge(key);
    const clientId = provider.clientInformation()?.client_id as string;
    const spent = provider.tokens()?.refresh_token as string;
    expect((await exchangeRefresh(clientId, spent)).status).toBe(200);
    const sessionId = transport.sessionId as string;
    const accessToken = provider.tokens()?.access_token as string;
    await stopRedis();

    // The rotated-out refresh token presented again revokes the whole chain (spec 3.3); the event that
    // would end the session cannot be published.
    const ended = sessionEnded(sessionId, accessToken);
    const reuse = await exchangeRefresh(clientId, spent);
    expect(reuse.status).toBe(400);
    const revokedAt = Number(
      await testEnv.db.oneFirst(sql.unsafe`
        SELECT (extract(epoch FROM c.revoked_at) * 1000)::float8 FROM oauth_chains c JOIN oauth_access_tokens t ON t.chain_id = c.id
        WHERE t.token_hash = sha256(convert_to(${accessToken}, 'UTF8'))`),
    );
    expect((await ended) - revokedAt).toBeLessThan(BOUND_MS);
    expect((await other.client.callTool({ name: 'describe_context', arguments: {} })).isError).toBeFalsy();
    await client.close().catch(() => undefined);
    await other.client.close();
  });
});
