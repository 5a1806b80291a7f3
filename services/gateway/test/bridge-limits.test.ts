import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';
import type { RunningGateway } from '../src/service.ts';
import { oauthClient, savePublicOrigin, signIn, waitForBridge } from './bridge-helpers.ts';
import { startTestGateway } from './gateway-harness.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const testEnv = useTestEnvironment();
/** Spec 8: bridge rate limiter, 120 requests a minute. */
const BRIDGE_REQUESTS_A_MINUTE = 120;
/** Believes X-Forwarded-For from 127.0.0.1, as behind the operator's own proxy. */
let proxied: RunningGateway;
/** Trusts no proxy, and allows a few seconds of refresh replay. */
let direct: RunningGateway;

beforeAll(async () => {
  proxied = await startTestGateway(testEnv, { MCP_TRUSTED_PROXIES: '127.0.0.1' });
  direct = await startTestGateway(testEnv, { BRIDGE_REFRESH_REPLAY_GRACE_SECONDS: '30' });
  // Both gateways serve the same saved origin; the tokens below are used on `direct`, which it names.
  await savePublicOrigin(testEnv, direct.address);
  await waitForBridge(proxied.address, true);
  await waitForBridge(direct.address, true);
});
afterAll(async () => {
  await proxied.close();
  await direct.close();
});

/** A cheap bridge request (an empty token request, answered 400) from the given forwarded address. */
const tokenRequest = (gateway: RunningGateway, forwardedFor?: string) =>
  fetch(`${gateway.address}${BRIDGE_PATHS.token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    body: '',
  });

describe('the bridge rate limiter (spec 8: 120 requests a minute, keyed by client address)', () => {
  it('answers the 121st request of a minute from one address with 429 and Retry-After, and not another address', async () => {
    const statuses: number[] = [];
    for (let batch = 0; batch < BRIDGE_REQUESTS_A_MINUTE / 20; batch += 1) {
      statuses.push(...(await Promise.all(Array.from({ length: 20 }, () => tokenRequest(proxied, '203.0.113.7')))).map((answer) => answer.status));
    }
    expect(statuses.every((status) => status === 400)).toBe(true);
    const limited = await tokenRequest(proxied, '203.0.113.7');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ error: 'too_many_requests' });
    // Registration and authorize share the bucket; the metadata documents are not limited.
    expect((await fetch(`${proxied.address}${BRIDGE_PATHS.register}`, { method: 'POST', headers: { 'x-forwarded-for': '203.0.113.7', 'content-type': 'application/json' }, body: '{}' })).status).toBe(429);
    expect((await fetch(`${proxied.address}${BRIDGE_PATHS.authorizationServer}`, { headers: { 'x-forwarded-for': '203.0.113.7' } })).status).toBe(200);
    expect((await tokenRequest(proxied, '198.51.100.9')).status).toBe(400);
  });

  it('ignores X-Forwarded-For from an address not in MCP_TRUSTED_PROXIES: every spoofed address counts as the caller', async () => {
    const statuses: number[] = [];
    for (let batch = 0; batch < BRIDGE_REQUESTS_A_MINUTE / 20 + 1; batch += 1) {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => tokenRequest(direct, `192.0.2.${batch * 20 + index}`)));
      statuses.push(...answers.map((answer) => answer.status));
    }
    expect(statuses.filter((status) => status === 400)).toHaveLength(BRIDGE_REQUESTS_A_MINUTE);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
  });
});

describe('the refresh replay grace (BRIDGE_REFRESH_REPLAY_GRACE_SECONDS)', () => {
  it('answers a replay of the token just rotated with the same new pair, which works, instead of revoking the chain', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'two-node-client', sectors: ['home'], expiresInDays: 30 });
    // The tests above spent this address's bucket; start a fresh window (ioredis does not prefix KEYS patterns).
    const windows = await testEnv.redis.keys(`${testEnv.redisPrefix}bridge:rate:*`);
    if (windows.length > 0) await testEnv.redis.del(...windows.map((name) => name.slice(testEnv.redisPrefix.length)));
    const { provider, captured } = oauthClient();
    const transport = new StreamableHTTPClientTransport(new URL(`${direct.address}/mcp`), { authProvider: provider });
    await expect(new Client({ name: 'hosted-agent', version: '1.0.0' }).connect(transport)).rejects.toThrow(/Unauthorized/);
    await transport.finishAuth(await signIn(captured.authorizationUrl as URL, key));
    const clientId = provider.clientInformation()?.client_id as string;
    const spent = provider.tokens()?.refresh_token as string;
    const refresh = async () =>
      (await fetch(`${direct.address}${BRIDGE_PATHS.token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: spent, client_id: clientId }),
      }).then(async (answer) => ({ status: answer.status, body: (await answer.json()) as Record<string, unknown> })));
    const first = await refresh();
    const replay = await refresh();
    expect(first.status).toBe(200);
    expect(replay.status).toBe(200);
    expect(replay.body.access_token).toBe(first.body.access_token);
    expect(replay.body.refresh_token).toBe(first.body.refresh_token);
    const client = new Client({ name: 'hosted-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${direct.address}/mcp`), { requestInit: { headers: { authorization: `Bearer ${replay.body.access_token as string}` } } }));
    expect((await client.callTool({ name: 'describe_context', arguments: {} })).isError).toBeFalsy();
    await client.close();
  });
});
