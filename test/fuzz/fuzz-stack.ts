import { openDatabase } from '@pcg/shared/db';
import { startPlaidDouble } from '@pcg/testkit/doubles';
import { waitFor } from '@pcg/testkit/testing';
import { seedDemo } from '../../scripts/demo/seed.ts';
import { launchStack, type LaunchedStack } from '../e2e/launched-stack.ts';
import { exchange, type FuzzAnswer, type FuzzRequest } from './http-exchange.ts';

/** The four real processes with the OAuth bridge on, a granted agent, a push connection and a bridge client. */
export type FuzzStack = {
  stack: LaunchedStack;
  consolePort: number;
  agentPort: number;
  agentName: string;
  agentKey: string;
  connectionId: string;
  ingestSecret: string;
  clientId: string;
  sessionId: string;
  /** Values that must never come back in an answer. */
  secrets: string[];
  send(request: FuzzRequest): Promise<FuzzAnswer>;
};

const MCP_ACCEPT = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function expectOk(answer: FuzzAnswer, what: string): Promise<Record<string, unknown>> {
  if (answer.status >= 300) throw new Error(`${what}: ${answer.status} ${answer.body.slice(0, 300)}`);
  return answer.body ? (JSON.parse(answer.body) as Record<string, unknown>) : {};
}

/** Port 9 (discard) on loopback: nothing listens there on a test machine. */
const CLOSED_ORIGIN = 'http://127.0.0.1:9';

export async function startFuzzStack(): Promise<FuzzStack> {
  // The bank aggregator's hosted link is opened by the sync-worker: a local double stands in, so a start
  // with whatever application the fuzz saved is refused by it, never sent to the real aggregator.
  const aggregator = await startPlaidDouble();
  // The OAuth providers' sign-in and token addresses point at a closed loopback port: a callback the fuzz
  // sends with a guessed code is refused there, never sent to Google, the wearable or Microsoft.
  const launched = await launchStack('fuzz', {
    PLAID_BASE_URL: aggregator.url,
    GOOGLE_BASE_URL: CLOSED_ORIGIN,
    WHOOP_BASE_URL: CLOSED_ORIGIN,
    MICROSOFT_LOGIN_BASE_URL: CLOSED_ORIGIN,
    MICROSOFT_GRAPH_BASE_URL: CLOSED_ORIGIN,
  });
  const stack: LaunchedStack = {
    ...launched,
    async stop() {
      const status = await launched.stop();
      await aggregator.close();
      return status;
    },
  };
  const consolePort = Number(new URL(stack.consoleUrl).port);
  const agentPort = Number(new URL(stack.mcpUrl).port);
  const send = (request: FuzzRequest) => exchange(request.port === 'console' ? consolePort : agentPort, request);
  const database = await openDatabase(stack.databaseUrl);
  await seedDemo(database.pool);
  await database.end();

  const json = { 'content-type': 'application/json' };
  const agentName = 'fuzz-agent';
  const agent = await expectOk(
    await send({ port: 'console', method: 'POST', path: '/api/agents', headers: json, body: { name: agentName, sectors: ['*'], expiresInDays: 30 } }),
    'create the agent',
  );
  const connection = await expectOk(
    await send({ port: 'console', method: 'POST', path: '/api/connections', headers: json, body: { provider: 'health-auto-export', displayName: 'fuzz phone' } }),
    'create the push connection',
  );
  await expectOk(
    await send({ port: 'console', method: 'PUT', path: '/api/settings', headers: json, body: { publicOrigin: `http://127.0.0.1:${agentPort}` } }),
    'switch the bridge on',
  );
  // The gateway learns of the saved origin through a settings event, after the PUT has answered.
  const metadata = { port: 'agent', method: 'GET', path: '/.well-known/oauth-authorization-server', headers: {} } as const;
  await waitFor(async () => ((await send(metadata)).status === 200 ? true : undefined), 10_000, 'the bridge to be on');
  const client = await expectOk(
    await send({ port: 'agent', method: 'POST', path: '/register', headers: json, body: { client_name: 'fuzz client', redirect_uris: ['http://127.0.0.1:9/callback'] } }),
    'register a bridge client',
  );
  const agentKey = String(agent.key);
  const initialize = await send({
    port: 'agent',
    method: 'POST',
    path: '/mcp',
    headers: { ...MCP_ACCEPT, authorization: `Bearer ${agentKey}` },
    body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } },
  });
  const sessionId = String(initialize.headers['mcp-session-id'] ?? '');
  if (initialize.status !== 200 || !sessionId) throw new Error(`initialize: ${initialize.status} ${initialize.body.slice(0, 200)}`);
  await send({
    port: 'agent',
    method: 'POST',
    path: '/mcp',
    headers: { ...MCP_ACCEPT, authorization: `Bearer ${agentKey}`, 'mcp-session-id': sessionId },
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  const ingestSecret = String(connection.ingestSecret);
  return {
    stack,
    consolePort,
    agentPort,
    agentName,
    agentKey,
    connectionId: String((connection.connection as { id: string }).id),
    ingestSecret,
    clientId: String(client.client_id),
    sessionId,
    secrets: [agentKey, ingestSecret],
    send,
  };
}
