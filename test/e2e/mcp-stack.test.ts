import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '@pcg/shared/db';
import { waitFor } from '@pcg/testkit/testing';
import { seedDemo } from '../../scripts/demo/seed.ts';
import { waitForSessionEnd } from '../../services/gateway/test/bridge-helpers.ts';
import { launchStack, type LaunchedStack } from './launched-stack.ts';

let stack: LaunchedStack;

beforeAll(async () => {
  stack = await launchStack('mcpe2e');
  const database = await openDatabase(stack.databaseUrl);
  await seedDemo(database.pool);
  await database.end();
}, 90_000);
afterAll(async () => {
  expect(await stack.stop()).toBe(0);
});

async function createAgent(name: string, sectors: string[]): Promise<string> {
  const response = await fetch(`${stack.consoleUrl}/api/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, sectors }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { key: string }).key;
}

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

const json = (result: unknown) => JSON.parse(((result as { content: Array<{ text: string }> }).content[0]?.text ?? '')) as Record<string, unknown>;

describe('the four real processes, driven by the official MCP SDK client', () => {
  it('lists tools, calls each read, pages with has_more, is refused an ungranted sector, and every call is audited', async () => {
    const key = await createAgent('e2e-claude', ['finance', 'home']);
    const client = await connect(key);
    expect((await client.listTools()).tools).toHaveLength(7);

    const context = json(await client.callTool({ name: 'describe_context', arguments: {} }));
    expect(context.sectors).toEqual(['finance', 'home']);
    // The demo seed: two finance sources (one account pair merges, one waits for the operator) and the home hub.
    expect((context.connections as Array<{ sector: string }>).map((connection) => connection.sector).sort()).toEqual(['finance', 'finance', 'home']);

    const schema = json(await client.callTool({ name: 'get_schema', arguments: {} }));
    expect((schema.objects as Array<{ name: string }>).map((object) => object.name)).toContain('home.entity');

    // select keeps 100 rows inside the page's size budget (issue 20).
    const first = json(await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', select: ['amount', 'posted_on'], limit: 100 } }));
    expect(first).toMatchObject({ row_count: 100, has_more: true });
    const second = json(await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', select: ['amount', 'posted_on'], limit: 100, cursor: first.next_cursor } }));
    const ids = new Set([...(first.rows as Array<{ id: string }>), ...(second.rows as Array<{ id: string }>)].map((row) => row.id));
    expect(ids.size).toBe(200);

    const record = json(await client.callTool({ name: 'get_record', arguments: { object: 'finance.transaction', id: (first.rows as Array<{ id: string }>)[0]?.id } }));
    expect(record.object).toBe('finance.transaction');

    const spend = json(await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', where: [{ field: 'amount', op: 'lt', value: 0 }], aggregate: { group_by: ['category'], metrics: [{ fn: 'sum', field: 'amount' }] } } }));
    expect((spend.rows as unknown[]).length).toBeGreaterThan(3);

    const refused = await client.callTool({ name: 'query', arguments: { object: 'mail.message' } });
    expect(refused.isError).toBe(true);

    const rows = await waitFor(async () => {
      const response = await fetch(`${stack.consoleUrl}/api/audit?agent=e2e-claude&limit=50`);
      const page = (await response.json()) as Array<{ tool: string; decision: string }>;
      return page.length >= 7 ? page : undefined;
    }, 10_000, 'the audit-writer to flush the calls');
    expect(rows.map((row) => row.tool).reverse()).toEqual(['describe_context', 'get_schema', 'query', 'query', 'get_record', 'query', 'query']);
    expect(rows[0]).toMatchObject({ tool: 'query', decision: 'deny', sector: 'mail', deny_reason: 'sector not granted' });
    await client.close();
  });

  it('ends a live session within one second of a revoke made in the Console process', async () => {
    const key = await createAgent('e2e-revoked', ['home']);
    const client = await connect(key);
    expect((await client.callTool({ name: 'describe_context', arguments: {} })).isError).toBeFalsy();
    const revoked = await fetch(`${stack.consoleUrl}/api/agents/e2e-revoked/revoke`, { method: 'POST' });
    expect(revoked.status).toBe(200);
    await waitForSessionEnd(client, 1_000);
    const again = new Client({ name: 'e2e-agent', version: '1.0.0' });
    await expect(again.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }))).rejects.toThrow(/Unauthorized/);
  });
});
