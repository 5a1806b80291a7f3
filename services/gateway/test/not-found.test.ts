import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { readHeartbeat } from '@pcg/shared/status';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { gatewayConfigSchema } from '../src/config.ts';
import { startGateway, type RunningGateway } from '../src/service.ts';

const testEnv = useTestEnvironment();
let gateway: RunningGateway;

beforeAll(async () => {
  const config = loadConfig(gatewayConfigSchema, testEnv.env({ MCP_HTTP_PORT: '0' }));
  gateway = await startGateway(config, createCapturingLogger('gateway').log);
});
afterAll(async () => gateway.close());

describe('gateway agent port, bridge off', () => {
  it.each([
    ['GET', '/'],
    ['GET', '/healthz'],
    ['GET', '/api/agents'],
    ['POST', '/mcp/extra'],
    ['GET', '/.well-known/oauth-protected-resource'],
    ['GET', '/.well-known/oauth-authorization-server'],
    ['POST', '/register'],
    ['POST', '/token'],
    ['GET', '/authorize'],
  ])('answers %s %s with 404 -32601 "Not found" (spec 7)', async (method, path) => {
    const response = await fetch(`${gateway.address}${path}`, { method });
    expect(response.status).toBe(404);
    expect(response.headers.get('www-authenticate')).toBeNull();
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      error: { code: -32601, message: 'Not found' },
      id: null,
    });
  });
});

describe('gateway heartbeat', () => {
  it('tells the Console it serves MCP, with its address', async () => {
    const beat = await waitFor(() => readHeartbeat(testEnv.redis).then((value) => value ?? undefined), 5_000, 'a heartbeat');
    expect(beat.address).toBe(`${gateway.address}/mcp`);
  });
});
