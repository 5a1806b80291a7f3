import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { createAgentEventPublisher, createAgentService } from '@pcg/shared/grants';
import { createCapturingLogger, createTestAgent, collectQueuedAuditRows, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { connectAgent, rawInitialize, rawMcp, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';

// Spec 2.4, 3.1, 3.2, 4.1 and 5 (agent port): what an MCP session holds, and what a key event changes for the next one.
const testEnv = useTestEnvironment();
let gateway: RunningGateway;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
});
afterAll(async () => gateway.close());
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

const sectorsOf = async (client: Awaited<ReturnType<typeof connectAgent>>['client']) =>
  (JSON.parse(((await client.callTool({ name: 'describe_context', arguments: {} })).content as Array<{ text: string }>)[0]?.text ?? '') as { sectors: string[] })
    .sectors;

describe('an MCP session and the grant it holds', () => {
  it('keeps the grant resolved at initialize: later tool calls do not re-read the store', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'resolved-once', sectors: ['finance'] });
    const { client } = await connectAgent(gateway.address, key);
    expect(await sectorsOf(client)).toEqual(['finance']);

    // The stored list changes behind the gateway's back: no key event, no new generation.
    await testEnv.db.query(sql.unsafe`UPDATE agents SET sectors = '{mail}' WHERE name = 'resolved-once'`);
    expect(await sectorsOf(client)).toEqual(['finance']);
    expect((await client.callTool({ name: 'query', arguments: { object: 'mail.message' } })).isError).toBe(true);
    expect((await client.callTool({ name: 'query', arguments: { object: 'finance.transaction' } })).isError).toBeFalsy();

    // The store did change: a new session resolves the key again and sees it.
    const { client: next } = await connectAgent(gateway.address, key);
    expect(await sectorsOf(next)).toEqual(['mail']);
    await client.close();
    await next.close();
  });

  it('applies edited sectors from the next session, after the edit ended the old one', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'edited-sectors', sectors: ['finance'] });
    const before = await rawInitialize(gateway.address, key);
    const agents = createAgentService({
      db: testEnv.db,
      events: createAgentEventPublisher(testEnv.redis, { REDIS_PREFIX: testEnv.redisPrefix }),
      log: createCapturingLogger().log,
    });
    await agents.update('edited-sectors', { sectors: ['health', 'home'] });
    const listTools = { 'mcp-session-id': before, authorization: `Bearer ${key}` };
    await waitFor(async () => ((await rawMcp(gateway.address, { headers: listTools, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } })).status === 404 ? true : undefined), 1_000, 'the old session to end');
    const { client } = await connectAgent(gateway.address, key);
    expect(await sectorsOf(client)).toEqual(['health', 'home']);
    await client.close();
  });

  it('opens the session\'s event stream on GET /mcp with the Mcp-Session-Id header', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'streaming', sectors: [] });
    const id = await rawInitialize(gateway.address, key);
    const abort = new AbortController();
    try {
      const stream = await fetch(`${gateway.address}/mcp`, {
        method: 'GET',
        headers: { 'mcp-session-id': id, authorization: `Bearer ${key}`, accept: 'text/event-stream' },
        signal: abort.signal,
      });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(stream.headers.get('mcp-session-id')).toBe(id);
    } finally {
      abort.abort();
    }
  });

  it('never puts the agent key in the audit record of its calls', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'key-not-audited', sectors: ['finance'] });
    const { client } = await connectAgent(gateway.address, key);
    await client.callTool({ name: 'describe_context', arguments: {} });
    await client.callTool({ name: 'query', arguments: { object: 'mail.message' } });
    await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', key } });
    await client.close();
    await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}x` }, body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} } });
    const rows = await collectQueuedAuditRows(testEnv.redis, 3);
    expect(rows.map((row) => row.agentId)).toContain('key-not-audited');
    // The one place a call could carry it, a parameter, is redacted by name (spec 8).
    expect(rows.find((row) => String(row.argsJson).includes('"key"'))?.argsJson).toContain('"key":"[redacted]"');
    expect(JSON.stringify(rows)).not.toContain(key.slice('pcg_'.length));
  });
});

describe('the transports offered to agents', () => {
  it('is Streamable HTTP only: the gateway builds no stdio transport', async () => {
    const src = path.resolve(import.meta.dirname, '../../services/gateway/src');
    // The operator's own stdio session (spec 5, `pcg mcp`) lives in src/stdio and is never part of the agent port:
    // nothing else in the gateway imports it.
    const all = (await readdir(src, { recursive: true })).filter((name) => name.endsWith('.ts'));
    const files = all.filter((name) => !name.startsWith(`stdio${path.sep}`));
    expect(files.length).toBeLessThan(all.length);
    const texts = await Promise.all(files.map((name) => readFile(path.join(src, name), 'utf8')));
    expect(texts.filter((text) => /from ['"][./]*\/?stdio\//.test(text))).toEqual([]);
    // The SDK's server package, by its root entry only (its stdio entry is the operator's session's).
    const sdkImports = texts.flatMap((text) => [...text.matchAll(/from ['"](@modelcontextprotocol\/[\w./-]+)['"]/g)].map((match) => match[1]));
    expect(new Set(sdkImports)).toEqual(new Set(['@modelcontextprotocol/server']));
    // The one transport the agent port's sessions speak through is the gateway's own Streamable HTTP one.
    const transports = files.filter((_, index) => /implements Transport\b/.test(texts[index] as string));
    expect(transports).toEqual([path.join('mcp', 'session-transport.ts')]);
    expect(texts.filter((text) => /Stdio\w*Transport/i.test(text))).toEqual([]);
  });
});
