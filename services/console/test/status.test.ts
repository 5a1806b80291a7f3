import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { startHeartbeat } from '@pcg/shared/status';
import { createCapturingLogger, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';

const testEnv = useTestEnvironment();
let app: FastifyInstance;

beforeAll(async () => {
  app = buildApp({ config: loadConfig(consoleConfigSchema, testEnv.env()), log: createCapturingLogger().log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis });
  await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
});
afterAll(async () => app.close());

describe('GET /api/status', () => {
  it('says MCP is not served, and what to do, when no gateway heartbeat is present (spec 7)', async () => {
    const status = (await app.inject({ method: 'GET', url: '/api/status' })).json();
    // Spec 7: the gateway is not serving MCP, MCP_HTTP_PORT must be set and the service restarted.
    expect(status.mcp).toEqual({ served: false, message: 'The gateway is not serving MCP: set MCP_HTTP_PORT (default 8788) and restart the service.' });
    expect(status.connections).toMatchObject([{ sector: 'home', provider: 'home-assistant', status: 'active', last_synced_at: null }]);
    expect(status.audit).toMatchObject({ queued: 0, dropped: { queueOverflow: 0, flushFailed: 0 } });
    expect(status.queues.sync).toMatchObject({ waiting: 0, active: 0 });
  });

  it('shows the gateway\'s address and session count while its heartbeat is fresh', async () => {
    const heartbeat = startHeartbeat(testEnv.redis, () => ({ address: 'http://127.0.0.1:8788/mcp', sessions: 3 }));
    try {
      const status = await (async () => {
        for (;;) {
          const answer = (await app.inject({ method: 'GET', url: '/api/status' })).json();
          if (answer.mcp.served) return answer;
        }
      })();
      expect(status.mcp).toMatchObject({ served: true, address: 'http://127.0.0.1:8788/mcp', sessions: 3 });
    } finally {
      await heartbeat.stop();
    }
    expect((await app.inject({ method: 'GET', url: '/api/status' })).json().mcp.served).toBe(false);
  });

  it('is behind the Host check', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/status', headers: { host: 'evil.example' } })).statusCode).toBe(403);
  });
});
