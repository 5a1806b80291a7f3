import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { openQueue } from '@pcg/shared/queues';
import { SECTORS } from '@pcg/shared/sectors';
import { collectQueuedAuditRows, createCapturingLogger, createTestAgent, insertTestConnection, takeQueuedAuditRows, useTestEnvironment } from '@pcg/testkit/testing';
import { healthAutoExportConnector } from '../../services/sync-worker/src/connectors/health-auto-export/health-auto-export-connector.ts';
import { homeAssistantConnector } from '../../services/sync-worker/src/connectors/home-assistant/home-assistant-connector.ts';
import { createConnectorRegistry } from '../../services/sync-worker/src/connectors/registry.ts';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { connectAgent, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';

// Spec 1 item 8: only `home` has an action catalogue; the five other sectors are read-only because every
// connector in them declares an empty action list.
const testEnv = useTestEnvironment();
const READ_ONLY = SECTORS.filter((sector) => sector !== 'home');
const LIGHT = { name: 'home.light.turn_on', sector: 'home', description: 'Turn a light on', input_schema: { type: 'object' } };
let gateway: RunningGateway;
let agent: Client;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  for (const sector of READ_ONLY) await insertTestConnection(testEnv.db, { sector });
  const hub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
  // The hub's catalogue as its sync stores it: the control that shows the tool does offer actions.
  await testEnv.db.query(sql.unsafe`UPDATE connections SET actions = ${sql.jsonb([LIGHT])} WHERE id = ${hub}::uuid`);
  agent = (await connectAgent(gateway.address, await createTestAgent(testEnv.db, { name: 'every-sector', sectors: [...SECTORS] }))).client;
});
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
});
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

type ToolAnswer = { isError?: boolean; content: Array<{ type: string; text: string }> };
const textOf = (answer: unknown) => (answer as ToolAnswer).content[0]?.text ?? '';

describe('the connectors of the read-only sectors', () => {
  it('declare an empty action list: only a home connector has actions', () => {
    const connectors = createConnectorRegistry().all();
    const readOnly = connectors.filter((connector) => !connector.provider.sectors.includes('home'));
    expect(readOnly.length).toBeGreaterThan(0);
    for (const connector of readOnly) expect(connector.actions, connector.provider.kind).toEqual([]);
    expect(connectors.find((connector) => connector.provider.sectors.includes('home'))?.actions).toBe('discovered');
  });

  it('are refused at boot if one declares an action', () => {
    const declaring = { ...healthAutoExportConnector, actions: [LIGHT], invokeAction: async () => ({ ok: true as const, result: null }) };
    expect(() => createConnectorRegistry([homeAssistantConnector, declaring])).toThrow("provider 'health-auto-export' is read-only and may declare no actions");
  });
});

describe('actions of read-only sectors through the MCP tools', () => {
  it('list_actions offers only home actions to an agent granted and connected in every sector', async () => {
    const all = JSON.parse(textOf(await agent.callTool({ name: 'list_actions', arguments: {} }))) as { actions: Array<{ name: string }> };
    expect(all.actions.map((action) => action.name)).toEqual([LIGHT.name]);
    for (const sector of READ_ONLY) {
      expect(JSON.parse(textOf(await agent.callTool({ name: 'list_actions', arguments: { sector } }))), sector).toEqual({ actions: [] });
    }
  });

  it('invoke_action refuses an action named in a read-only sector as a tool error, before any source is asked', async () => {
    for (const sector of READ_ONLY) {
      const answer = (await agent.callTool({ name: 'invoke_action', arguments: { name: `${sector}.x.y` } })) as ToolAnswer;
      expect(answer.isError, sector).toBe(true);
      expect(textOf(answer)).toBe(`unknown action '${sector}.x.y'; list_actions shows the actions ${sector} offers`);
    }
    const rows = await collectQueuedAuditRows(testEnv.redis, READ_ONLY.length, (row) => row.tool === 'invoke_action');
    expect(rows.map((row) => [row.sector, row.decision, row.outcome])).toEqual(READ_ONLY.map((sector) => [sector, 'allow', 'error']));
    // Nothing was sent towards a source: the live queue the sync-worker serves is empty.
    const queue = await openQueue({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'live', createCapturingLogger().log, 'probe');
    try {
      expect(await queue.getJobCountByTypes('waiting', 'active', 'delayed', 'completed', 'failed')).toBe(0);
    } finally {
      await queue.close();
    }
  });
});
