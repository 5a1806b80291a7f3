import type { Logger } from '@pcg/shared/logger';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import { createLiveRequester } from '@pcg/shared/queues';
import { startHeartbeat } from '@pcg/shared/status';
import { buildApp } from './app.ts';
import type { GatewayConfig } from './config.ts';
import { registerMcpGateway } from './mcp/mcp-gateway.ts';
import type { SessionRegistry } from './mcp/session-registry.ts';

export type RunningGateway = Infrastructure & {
  /** `http://host:port` the agent port listens on. */
  address: string;
  /** The live MCP sessions of this gateway. */
  sessions: SessionRegistry;
};

export async function startGateway(config: GatewayConfig, log: Logger): Promise<RunningGateway> {
  const infra = await openInfrastructure(config, 'gateway', log);
  const live = await createLiveRequester(config, log, { timeoutMs: config.LIVE_TIMEOUT_MS }).catch(async (error: unknown) => {
    await infra.close();
    throw error;
  });
  const app = buildApp({ log });
  const mcp = await registerMcpGateway(app, { config, log, db: infra.db, redis: infra.redis, live });
  const address = await app.listen({ host: config.BIND_HOST, port: config.MCP_HTTP_PORT }).catch(async (error: unknown) => {
    await mcp.close();
    await live.close();
    await infra.close();
    throw error;
  });
  const heartbeat = startHeartbeat(infra.redis, () => ({ address: `${address}/mcp`, sessions: mcp.registry.size }));
  return {
    ...infra,
    address,
    sessions: mcp.registry,
    async close() {
      // Stop taking requests, end the sessions (their streams would hold app.close open), then release.
      await heartbeat.stop();
      const closing = app.close();
      await mcp.close();
      await closing;
      await live.close();
      await infra.close();
    },
  };
}
