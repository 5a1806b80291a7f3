import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { createAgentEventPublisher, createAgentService } from '@pcg/shared/grants';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';
import type { RunningGateway } from '../src/service.ts';
import { auditCollector, oauthClient, savePublicOrigin, signIn, waitForBridge, waitForSessionEnd } from './bridge-helpers.ts';
import { INITIALIZE, rawMcp, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
const auditRows = auditCollector(testEnv);

const consoleAgents = () =>
  createAgentService({ db: testEnv.db, events: createAgentEventPublisher(testEnv.redis, { REDIS_PREFIX: testEnv.redisPrefix }), log: createCapturingLogger().log });

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  await savePublicOrigin(testEnv, gateway.address);
  await waitForBridge(gateway.address, true);
});
afterAll(async () => gateway.close());

const mcpUrl = () => new URL(`${gateway.address}/mcp`);
const json = (result: unknown) => JSON.parse((result as { content: Array<{ text: string }> }).content[0]?.text ?? '') as Record<string, unknown>;

/** The whole flow a hosted client runs: 401, discovery, registration, sign-in, code exchange, a connected client. */
async function connectThroughBridge(key: string, clientName = 'Test client') {
  const { provider, captured } = oauthClient(clientName);
  const first = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
  await expect(new Client({ name: 'hosted-agent', version: '1.0.0' }).connect(first)).rejects.toThrow(UnauthorizedError);
  expect(captured.authorizationUrl).toBeDefined();
  const code = await signIn(captured.authorizationUrl as URL, key);
  await first.finishAuth(code);
  const client = new Client({ name: 'hosted-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
  return { client, provider };
}

const exchangeRefresh = (clientId: string, refreshToken: string) =>
  fetch(`${gateway.address}${BRIDGE_PATHS.token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }),
  });

describe('the official SDK client through the bridge', () => {
  it('discovers, registers, signs in with the pasted key, exchanges the code with PKCE and calls a tool as the agent', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'hosted-claude', sectors: ['finance', 'home'], expiresInDays: 30 });
    const { client, provider } = await connectThroughBridge(key);
    const tokens = provider.tokens();
    expect(tokens?.access_token.startsWith('pcgat_')).toBe(true);
    expect(tokens?.expires_in).toBe(3600);
    expect(tokens?.token_type).toBe('Bearer');
    // The token resolves to the same grant row as the key: the same name and sectors.
    expect(json(await client.callTool({ name: 'describe_context', arguments: {} })).sectors).toEqual(['finance', 'home']);
    const rows = await waitFor(async () => {
      const all = await auditRows();
      const issued = all.filter((row) => row.tool === 'oauth_token' && row.agentId === 'hosted-claude');
      const call = all.find((row) => row.tool === 'describe_context' && row.agentId === 'hosted-claude');
      return issued.length > 0 && call ? { issued, call } : undefined;
    });
    expect(rows.issued).toMatchObject([
      { decision: 'allow', outcome: 'ok', sector: null, argsJson: JSON.stringify({ grant: 'authorization_code', clientId: provider.clientInformation()?.client_id }) },
    ]);
    await client.close();
  });

  it('refreshes an expired access token by itself, and a reused refresh token revokes the whole chain and ends the session', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'refreshing-agent', sectors: ['home'], expiresInDays: 30 });
    const { client, provider } = await connectThroughBridge(key);
    const before = provider.tokens();
    const clientId = provider.clientInformation()?.client_id as string;
    // The access token's hour is over: the next connection is refused with invalid_token and the SDK refreshes.
    await testEnv.db.query(sql.unsafe`UPDATE oauth_access_tokens SET expires_at = now() - interval '1 second'`);
    const again = new Client({ name: 'hosted-agent', version: '1.0.0' });
    await again.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
    const after = provider.tokens();
    expect(after?.access_token).not.toBe(before?.access_token);
    expect(after?.refresh_token).not.toBe(before?.refresh_token);
    expect(json(await again.callTool({ name: 'describe_context', arguments: {} })).sectors).toEqual(['home']);

    // The rotated-out refresh token presented again: invalid_grant, and every token of the chain dies.
    const reuse = await exchangeRefresh(clientId, before?.refresh_token as string);
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ error: 'invalid_grant' });
    await waitForSessionEnd(again, 2_000);
    const refused = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${after?.access_token}` }, body: INITIALIZE });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await exchangeRefresh(clientId, after?.refresh_token as string)).status).toBe(400);
    const rows = await waitFor(async () => {
      const found = (await auditRows()).filter((row) => row.tool === 'oauth_token' && row.agentId === 'refreshing-agent');
      return found.length >= 3 ? found : undefined;
    });
    expect(rows.map((row) => [row.decision, JSON.parse(row.argsJson as string).grant])).toEqual([
      ['allow', 'authorization_code'],
      ['allow', 'refresh_token'],
      ['deny', 'refresh_token'],
    ]);
    expect(rows[2]).toMatchObject({ denyReason: 'token: refresh token reused, chain revoked' });
    await client.close().catch(() => undefined);
  });

  it('keeps one session across a refresh: a new token of the same grant is accepted on the open session', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'long-session', sectors: ['home'], expiresInDays: 30 });
    const { client, provider } = await connectThroughBridge(key);
    const old = provider.tokens()?.access_token;
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('AUTHORIZED');
    expect(provider.tokens()?.access_token).not.toBe(old);
    // The SDK sends the newest token on the same session; the gateway rebinds it (same agent, same generation).
    expect(json(await client.callTool({ name: 'describe_context', arguments: {} })).sectors).toEqual(['home']);
    await client.close();
  });
});

describe('a key event ends the bridge tokens made from the key', () => {
  it.each([
    ['revoke', (name: string) => consoleAgents().revoke(name)],
    ['rotate', (name: string) => consoleAgents().rotate(name)],
    ['delete', (name: string) => consoleAgents().remove(name)],
  ])('%s ends the live session, refuses the access token and the refresh token', async (label, act) => {
    const name = `bridge-${label}`;
    const key = await createTestAgent(testEnv.db, { name, sectors: ['home'], expiresInDays: 90 });
    const { client, provider } = await connectThroughBridge(key);
    const tokens = provider.tokens();
    await act(name);
    await waitForSessionEnd(client, 1_000);
    const refused = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${tokens?.access_token}` }, body: INITIALIZE });
    expect(refused.status).toBe(401);
    const refresh = await exchangeRefresh(provider.clientInformation()?.client_id as string, tokens?.refresh_token as string);
    expect(refresh.status).toBe(400);
    expect(await refresh.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('never issues a token that outlives the key: expires_in stops at the key\'s expiry', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'nearly-expired', sectors: ['home'], expiresInDays: 1 });
    await testEnv.db.query(sql.unsafe`UPDATE agents SET expires_at = now() + interval '10 minutes' WHERE name = 'nearly-expired'`);
    const { client, provider } = await connectThroughBridge(key);
    expect(provider.tokens()?.expires_in).toBeLessThanOrEqual(600);
    expect(provider.tokens()?.expires_in).toBeGreaterThan(590);
    const refreshExpiry = await testEnv.db.oneFirst(sql.unsafe`
      SELECT bool_and(t.expires_at <= a.expires_at) FROM oauth_refresh_tokens t JOIN oauth_chains c ON c.id = t.chain_id
      JOIN agents a ON a.id = c.agent_id WHERE a.name = 'nearly-expired'`);
    expect(refreshExpiry).toBe(true);
    await client.close();
  });
});

describe('what the store holds', () => {
  it('keeps codes and tokens only as their SHA-256, and no client secret', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'hashed-store', sectors: [], expiresInDays: 30 });
    const { client, provider } = await connectThroughBridge(key);
    const tokens = provider.tokens();
    const dump = await testEnv.db.oneFirst(sql.unsafe`
      SELECT concat_ws(' ', (SELECT string_agg(t::text, ' ') FROM oauth_access_tokens t), (SELECT string_agg(t::text, ' ') FROM oauth_refresh_tokens t),
        (SELECT string_agg(t::text, ' ') FROM oauth_codes t), (SELECT string_agg(t::text, ' ') FROM oauth_clients t), (SELECT string_agg(t::text, ' ') FROM oauth_chains t))`);
    expect(String(dump)).not.toContain(tokens?.access_token);
    expect(String(dump)).not.toContain(tokens?.refresh_token);
    expect(String(dump)).not.toContain(key);
    expect(provider.clientInformation()).not.toHaveProperty('client_secret');
    await client.close();
  });
});
