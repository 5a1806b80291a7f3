import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, type TestEnvironment } from '@pcg/testkit/testing';
import { gatewayConfigSchema } from '../src/config.ts';
import { startGateway, type RunningGateway } from '../src/service.ts';

/** A gateway on the test's environment; `logs` returns the lines it has logged so far. */
export async function startTestGateway(
  testEnv: TestEnvironment,
  env: Record<string, string> = {},
  options: { now?: () => Date } = {},
): Promise<RunningGateway & { logs: () => string[] }> {
  const config = loadConfig(gatewayConfigSchema, testEnv.env({ MCP_HTTP_PORT: '0', SERVICE_NAME: 'pcg-test-gateway', ...env }));
  const { log, lines } = createCapturingLogger('gateway');
  return Object.assign(await startGateway(config, log, options), { logs: lines });
}

/** An agent as it would connect: the official SDK client over Streamable HTTP with its key. */
export async function connectAgent(address: string, key: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${address}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  return { client, transport };
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-client', version: '1.0.0' } },
};

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** One raw HTTP exchange with /mcp; the body is read whole (SSE answers end after the response). */
export async function rawMcp(
  address: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown; path?: string },
): Promise<{ status: number; headers: Headers; text: string; json: () => unknown }> {
  const response = await fetch(`${address}${options.path ?? '/mcp'}`, {
    method: options.method ?? 'POST',
    headers: options.method === 'GET' || options.method === 'DELETE' ? options.headers : { ...MCP_HEADERS, ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

/** Opens a session with raw HTTP and returns its id. */
export async function rawInitialize(address: string, key: string): Promise<string> {
  const answer = await rawMcp(address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });
  const id = answer.headers.get('mcp-session-id');
  if (answer.status !== 200 || !id) throw new Error(`initialize failed: ${answer.status} ${answer.text}`);
  return id;
}

/** The JSON-RPC message inside an SSE answer (or a plain JSON one). */
export function messageOf(text: string): Record<string, unknown> {
  // A priming event (an id and an empty data line, for resumption) comes first and holds no message.
  const data = text.split('\n').find((line) => line.startsWith('data: ') && line.length > 6);
  return JSON.parse(data ? data.slice(6) : text) as Record<string, unknown>;
}

/**
 * A JSON-RPC error envelope as the tests expect it; callers pass the code and message as literals copied
 * from spec 7 (or the gateway's own texts), never the constants the code answers with.
 */
export function rpcError(code: number, message: string, id: string | number | null = null, data?: string) {
  return { jsonrpc: '2.0', error: data === undefined ? { code, message } : { code, message, data }, id };
}
