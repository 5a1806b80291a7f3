import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, sql } from '@pcg/shared/db';
import { waitFor } from '@pcg/testkit/testing';
import { oauthClient, signIn, waitForSessionEnd } from '../../services/gateway/test/bridge-helpers.ts';
import { launchStack, type LaunchedStack } from './launched-stack.ts';

let stack: LaunchedStack;

beforeAll(async () => {
  stack = await launchStack('bridgee2e');
}, 90_000);
afterAll(async () => {
  expect(await stack.stop()).toBe(0);
});

const consoleCall = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${stack.consoleUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
};
const origin = () => new URL(stack.mcpUrl).origin;
const bridgeServes = async (on: boolean) =>
  waitFor(async () => ((await fetch(`${origin()}/.well-known/oauth-protected-resource/mcp`)).status === (on ? 200 : 404) ? true : undefined), 5_000, 'the bridge to switch');
const json = (result: unknown) => JSON.parse((result as { content: Array<{ text: string }> }).content[0]?.text ?? '') as Record<string, unknown>;

describe('the OAuth bridge across the four real processes, driven by the SDK client', () => {
  it('switches on from the Console, signs a hosted client in, serves a tool call, refreshes, and revokes the chain on reuse', async () => {
    const agent = await consoleCall('POST', '/api/agents', { name: 'e2e-hosted', sectors: ['home'], expiresInDays: 30 });
    expect(agent.status).toBe(201);
    // The gateway process picks the saved origin up without a restart.
    expect((await consoleCall('PUT', '/api/settings', { publicOrigin: origin() })).json).toMatchObject({ publicOrigin: origin(), mcpUrl: stack.mcpUrl });
    await bridgeServes(true);

    const { provider, captured } = oauthClient('E2E hosted client');
    const first = new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: provider });
    await expect(new Client({ name: 'hosted', version: '1.0.0' }).connect(first)).rejects.toThrow(UnauthorizedError);
    await first.finishAuth(await signIn(captured.authorizationUrl as URL, agent.json.key as string));
    const client = new Client({ name: 'hosted', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: provider }));
    expect(json(await client.callTool({ name: 'describe_context', arguments: {} })).sectors).toEqual(['home']);

    // An hour later: the access token is refused, the SDK refreshes by itself and reconnects.
    const spent = provider.tokens()?.refresh_token as string;
    const database = await openDatabase(stack.databaseUrl);
    await database.pool.query(sql.unsafe`UPDATE oauth_access_tokens SET expires_at = now() - interval '1 second'`);
    await database.end();
    const later = new Client({ name: 'hosted', version: '1.0.0' });
    await later.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: provider }));
    expect(provider.tokens()?.refresh_token).not.toBe(spent);
    expect(json(await later.callTool({ name: 'describe_context', arguments: {} })).sectors).toEqual(['home']);

    // The rotated-out refresh token again: the whole chain is revoked, and the live session ends.
    const reuse = await fetch(`${origin()}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: spent, client_id: provider.clientInformation()?.client_id as string }),
    });
    expect(await reuse.json()).toMatchObject({ error: 'invalid_grant' });
    await waitForSessionEnd(later, 2_000);

    const ledger = await waitFor(async () => {
      const response = await fetch(`${stack.consoleUrl}/api/audit?tool=oauth_token`);
      const rows = (await response.json()) as Array<Record<string, unknown>>;
      return rows.length >= 3 ? rows : undefined;
    }, 10_000, 'the audit-writer to flush the token rows');
    expect(ledger.map((row) => [row.agent_id, row.decision, (row.args as { grant: string }).grant]).reverse()).toEqual([
      ['e2e-hosted', 'allow', 'authorization_code'],
      ['e2e-hosted', 'allow', 'refresh_token'],
      ['e2e-hosted', 'deny', 'refresh_token'],
    ]);
    expect((ledger[0]?.args as { clientId: string }).clientId).toBe(provider.clientInformation()?.client_id);

    // Cleared in the Console: the bridge is off again, still without a restart.
    expect((await consoleCall('PUT', '/api/settings', { publicOrigin: null })).status).toBe(200);
    await bridgeServes(false);
  });
});
