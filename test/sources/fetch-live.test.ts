import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, createTestAgent, collectQueuedAuditRows, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { connectAgent, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// fetch_live end to end (spec 4.2, 4.4, 6): an agent asks through the MCP tool and through the mirror;
// the gateway and the Console queue a live job; the sync-worker alone asks the hub. A sector whose only
// source pushes its data is refused before any job.
const testEnv = useTestEnvironment();
let hub: HomeAssistantDouble;
let worker: RunningSyncWorker;
let consoleService: RunningConsole;
let gateway: RunningGateway;
let agent: Client;
let key: string;
let hubId: string;

const api = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${consoleService.address}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
};
const toolJson = (result: Awaited<ReturnType<Client['callTool']>>) => JSON.parse((result.content as Array<{ text: string }>)[0]?.text ?? '') as Record<string, unknown>;
const cachedState = (entityId: string) =>
  testEnv.db.oneFirst(sql.type(z.object({ state: z.string() }))`SELECT state FROM home_entities WHERE source_id = ${entityId}`);

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: randomBytes(32).toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log);
  gateway = await startTestGateway(testEnv, env);
  hubId = ((await api('/api/connections', { provider: 'home-assistant', credentials: { baseUrl: hub.url, token: hub.token } })).json.connection as { id: string }).id;
  await api('/api/connections', { provider: 'health-auto-export' });
  await waitFor(async () => ((await cachedState('switch.coffee_maker').catch(() => undefined)) === 'off' ? true : undefined), 10_000, 'the first sync');
  key = await createTestAgent(testEnv.db, { name: 'live-agent', sectors: ['home', 'health'] });
  agent = (await connectAgent(gateway.address, key)).client;
});
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  await consoleService?.close();
  await worker?.close();
  await hub?.close();
});

const coffeeMaker = { object: 'home.entity', where: [{ field: 'entity_id', op: 'eq', value: 'switch.coffee_maker' }] };

describe('fetch_live against a live connection', () => {
  it('reads the current state from the hub through the MCP tool, not the cache, and records one allow row', async () => {
    hub.setState('switch.coffee_maker', 'on');
    await takeQueuedAuditRows(testEnv.redis);
    const result = await agent.callTool({ name: 'fetch_live', arguments: coffeeMaker });
    expect(result.isError).toBeFalsy();
    expect(toolJson(result)).toMatchObject({ object: 'home.entity', live: true, rows: [{ connection_id: hubId, entity_id: 'switch.coffee_maker', state: 'on' }] });
    expect(await cachedState('switch.coffee_maker')).toBe('off');
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.tool === 'fetch_live');
    expect(rows).toMatchObject([{ agentId: 'live-agent', sector: 'home', decision: 'allow', outcome: 'ok', resultCount: 1 }]);
  });

  it('reads the same through the mirror', async () => {
    hub.setState('sensor.kitchen_temperature', '24.5');
    const kitchen = { object: 'home.entity', where: [{ field: 'entity_id', op: 'eq', value: 'sensor.kitchen_temperature' }] };
    const response = await api('/api/fetch_live', kitchen, { authorization: `Bearer ${key}` });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ object: 'home.entity', live: true, rows: [{ connection_id: hubId, entity_id: 'sensor.kitchen_temperature', state: '24.5' }] });
    expect(await cachedState('sensor.kitchen_temperature')).toBe('21.5');
    const rows = await collectQueuedAuditRows(testEnv.redis, 1, (row) => row.tool === 'fetch_live');
    expect(rows).toMatchObject([{ agentId: 'live-agent', sector: 'home', decision: 'allow', outcome: 'ok', resultCount: 1 }]);
  });

  it('refuses an object whose only source pushes its data, on the tool and the mirror', async () => {
    const phone = await testEnv.db.oneFirst(sql.type(z.object({ name: z.string() }))`SELECT display_name AS name FROM connections WHERE provider = 'health-auto-export'`);
    const expected =
      `health.sample cannot be read live from any active connection: ${phone} (health-auto-export): Phone health app (Health Auto Export) pushes its data to the gateway, so there is no source to ask. ` +
      `Query the cache instead: query {"object": "health.sample"} reads the stored rows; data age: ${phone} never synced (data_age_seconds in describe_context).`;
    const result = await agent.callTool({ name: 'fetch_live', arguments: { object: 'health.sample' } });
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: expected }] });
    const response = await api('/api/fetch_live', { object: 'health.sample' }, { authorization: `Bearer ${key}` });
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ error: expected });
    const rows = await collectQueuedAuditRows(testEnv.redis, 2, (row) => row.tool === 'fetch_live');
    expect(rows).toMatchObject([
      { agentId: 'live-agent', sector: 'health', decision: 'allow', outcome: 'error' },
      { agentId: 'live-agent', sector: 'health', decision: 'allow', outcome: 'error' },
    ]);
  });
});
