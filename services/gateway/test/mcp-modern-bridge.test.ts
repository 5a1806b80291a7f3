import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import type { RunningGateway } from '../src/service.ts';
import { auditCollector, oauthClient, savePublicOrigin, signIn, waitForBridge } from './bridge-helpers.ts';
import { INITIALIZE, rawMcp, startTestGateway } from './gateway-harness.ts';
import { modernCall, modernHeaders, MODERN_META } from './modern-harness.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;
const auditRows = auditCollector(testEnv);

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  await savePublicOrigin(testEnv, gateway.address);
  await waitForBridge(gateway.address, true);
});
afterAll(async () => gateway.close());

/** A bridge access token for `key`, got as a hosted client gets one: 401, registration, sign-in, code exchange. */
async function bridgeToken(key: string): Promise<string> {
  const { provider, captured } = oauthClient();
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway.address}/mcp`), { authProvider: provider });
  await expect(new Client({ name: 'hosted-agent', version: '1.0.0' }).connect(transport)).rejects.toThrow(UnauthorizedError);
  await transport.finishAuth(await signIn(captured.authorizationUrl as URL, key));
  const token = provider.tokens()?.access_token;
  if (!token) throw new Error('no access token');
  return token;
}

describe('the modern lane while the OAuth bridge is on (spec 5, design 8.1)', () => {
  it('records a refused call with no key, as it does for initialize while the bridge is on (spec 6)', async () => {
    // First in the file, so no other refusal's row is on its way.
    expect((await auditRows()).filter((row) => row.tool === 'initialize')).toEqual([]);
    await rawMcp(gateway.address, { headers: modernHeaders('server/discover'), body: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } } });
    const rows = await waitFor(async () => {
      const initializeRows = (await auditRows()).filter((row) => row.tool === 'initialize');
      return initializeRows.length > 0 ? initializeRows : undefined;
    });
    expect(rows).toMatchObject([{ agentId: null, tool: 'initialize', decision: 'deny', denyReason: 'missing' }]);
  });

  it('accepts a bridge access token as sessions do: the call runs as the token\'s agent', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'hosted-modern', sectors: ['home'], expiresInDays: 30 });
    const token = await bridgeToken(key);
    expect(token.startsWith('pcgat_')).toBe(true);
    const answer = await modernCall(gateway.address, token, 'tools/call', { name: 'describe_context', arguments: {} });
    expect(answer.status).toBe(200);
    const result = (answer.json() as { result: { content: Array<{ text: string }> } }).result;
    expect(JSON.parse(result.content[0]?.text ?? '')).toMatchObject({ sectors: ['home'] });
    const agents = await waitFor(async () => {
      const calls = (await auditRows()).filter((row) => row.tool === 'describe_context');
      return calls.length > 0 ? calls.map((row) => row.agentId) : undefined;
    });
    expect(agents).toEqual(['hosted-modern']);
  });

  it.each([
    ['no Authorization', {}],
    ['an unknown key', { authorization: `Bearer pcg_${'z'.repeat(43)}` }],
    ['an unknown bridge token', { authorization: `Bearer pcgat_${'z'.repeat(43)}` }],
  ])('refuses a modern request with %s exactly as an initialize, WWW-Authenticate challenge included', async (_label, headers: Record<string, string>) => {
    const initialize = await rawMcp(gateway.address, { headers, body: INITIALIZE });
    const modern = await rawMcp(gateway.address, { headers: { ...modernHeaders('server/discover'), ...headers }, body: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } } });
    expect(initialize.status).toBe(401);
    expect(modern.status).toBe(401);
    expect(modern.json()).toEqual(initialize.json());
    expect(initialize.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(modern.headers.get('www-authenticate')).toBe(initialize.headers.get('www-authenticate'));
  });
});
