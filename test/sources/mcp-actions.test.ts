import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { listConnectionActions } from '@pcg/shared/live';
import { ACTION_TARGET_RULES } from '@pcg/shared/reads';
import { collectQueuedAuditRows, createCapturingLogger, createTestAgent, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { connectAgent, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';

// Actions through the MCP tools, end to end: the hub double connected in the Console, synced by the
// sync-worker, and list_actions / invoke_action called by an agent with the official SDK client.
const testEnv = useTestEnvironment();
let hub: HomeAssistantDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let gateway: RunningGateway;
let homeAgent: Client;
let financeAgent: Client;
let hubId: string;

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: randomBytes(32).toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  gateway = await startTestGateway(testEnv, { LIVE_TIMEOUT_MS: '10000' });
  const created = await fetch(`${consoleService.address}/api/connections`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'home-assistant', credentials: { baseUrl: hub.url, token: hub.token } }),
  });
  expect(created.status).toBe(201);
  hubId = ((await created.json()) as { connection: { id: string } }).connection.id;
  await waitFor(async () => ((await listConnectionActions(testEnv.db, ['home'])).length > 0 ? true : undefined), 15_000, 'the first sync');
  homeAgent = (await connectAgent(gateway.address, await createTestAgent(testEnv.db, { name: 'home-agent', sectors: ['home', 'finance'] }))).client;
  financeAgent = (await connectAgent(gateway.address, await createTestAgent(testEnv.db, { name: 'finance-agent', sectors: ['finance'] }))).client;
}, 60_000);
afterAll(async () => {
  await homeAgent?.close();
  await financeAgent?.close();
  await gateway?.close();
  await consoleService?.close();
  await worker?.close();
  await hub?.close();
});
beforeEach(async () => {
  await takeQueuedAuditRows(testEnv.redis);
});

type ToolAnswer = { isError?: boolean; content: Array<{ type: string; text: string }> };
const parsed = (answer: unknown) => JSON.parse((answer as ToolAnswer).content[0]?.text ?? '') as Record<string, unknown>;

/** The audit rows of one tool, polled until there is at least one. */
const rowsOf = (tool: string) => collectQueuedAuditRows(testEnv.redis, 1, (row) => row.tool === tool);

describe('list_actions through the tool (spec 4.2)', () => {
  it("returns the hub's actions to an agent granted home", async () => {
    const { actions } = parsed(await homeAgent.callTool({ name: 'list_actions', arguments: {} })) as { actions: Array<{ name: string; sector: string }> };
    expect(actions.map((action) => action.name)).toContain('home.switch.toggle');
    expect(actions.every((action) => action.name.startsWith('home.'))).toBe(true);
  });

  it('filters by granted sector: an agent without home sees none, and naming home is denied', async () => {
    expect(parsed(await financeAgent.callTool({ name: 'list_actions', arguments: {} }))).toEqual({ actions: [] });
    const named = (await financeAgent.callTool({ name: 'list_actions', arguments: { sector: 'home' } })) as ToolAnswer;
    expect(named).toMatchObject({ isError: true, content: [{ type: 'text', text: "access denied: sector 'home' is not granted to this agent (granted: finance)" }] });
    expect((await collectQueuedAuditRows(testEnv.redis, 2, (row) => row.tool === 'list_actions')).at(-1)).toMatchObject({ agentId: 'finance-agent', decision: 'deny', sector: 'home', denyReason: 'sector not granted' });
  });
});

describe('invoke_action through the tool (spec 4.1, 4.2)', () => {
  it("performs an action: the hub's state changes, and the row is allow / ok", async () => {
    const before = hub.state('switch.coffee_maker')?.state;
    const answer = (await homeAgent.callTool({ name: 'invoke_action', arguments: { name: 'home.switch.toggle', arguments: { entity_id: 'switch.coffee_maker' } } })) as ToolAnswer;
    expect(answer.isError).toBeFalsy();
    expect(parsed(answer)).toMatchObject({ ok: true, connection_id: hubId });
    expect(hub.state('switch.coffee_maker')?.state).not.toBe(before);
    expect(await rowsOf('invoke_action')).toMatchObject([{ agentId: 'home-agent', sector: 'home', decision: 'allow', outcome: 'ok' }]);
  });

  it('refuses an entity the hub does not have, after asking the hub, naming how to find valid ones (issue 20)', async () => {
    const asked = hub.requestsTo('/api/states/light.attic').length;
    const calls = hub.requestsTo('/api/services').length;
    const answer = (await homeAgent.callTool({ name: 'invoke_action', arguments: { name: 'home.light.turn_on', arguments: { entity_id: 'light.attic' } } })) as ToolAnswer;
    expect(answer).toMatchObject({ isError: true, content: [{ type: 'text', text: ACTION_TARGET_RULES.unknownEntity(['light.attic'], [hubId]) }] });
    expect(hub.requestsTo('/api/states/light.attic').length).toBe(asked + 1);
    expect(hub.requestsTo('/api/services').length).toBe(calls);
    expect(await rowsOf('invoke_action')).toMatchObject([{ agentId: 'home-agent', sector: 'home', decision: 'allow', outcome: 'error' }]);
  });

  it('answers a rejection by the source as an ordinary result with ok: false, audited allow / error', async () => {
    hub.failNext('/api/services/switch/toggle', 400);
    const answer = (await homeAgent.callTool({ name: 'invoke_action', arguments: { name: 'home.switch.toggle', arguments: { entity_id: 'switch.coffee_maker' } } })) as ToolAnswer;
    expect(answer.isError).toBeFalsy();
    expect(answer.content).toHaveLength(1);
    const result = parsed(answer);
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/^the hub rejected home\.switch\.toggle: /);
    expect(await rowsOf('invoke_action')).toMatchObject([{ agentId: 'home-agent', sector: 'home', decision: 'allow', outcome: 'error' }]);
  });

  it('refuses an action in a sector the agent was not granted before it reaches the hub', async () => {
    const calls = hub.requestsTo('/api/services').length;
    const answer = (await financeAgent.callTool({ name: 'invoke_action', arguments: { name: 'home.switch.toggle', arguments: { entity_id: 'switch.coffee_maker' } } })) as ToolAnswer;
    expect(answer.isError).toBe(true);
    expect(hub.requestsTo('/api/services').length).toBe(calls);
    expect(await rowsOf('invoke_action')).toMatchObject([{ agentId: 'finance-agent', sector: 'home', decision: 'deny' }]);
  });
});
