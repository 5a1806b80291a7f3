import type { Logger } from '@pcg/shared/logger';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import { createMetrics, startMetricsPublisher, type Metrics } from '@pcg/shared/metrics';
import { startHeartbeat } from '@pcg/shared/status';
import { buildApp } from './app.ts';
import { openBridgeSwitch, type BridgeSwitch } from './bridge/bridge-switch.ts';
import type { GatewayConfig } from './config.ts';
import { liveRequesterOnFirstUse } from './live/live-on-first-use.ts';
import { registerMcpGateway } from './mcp/mcp-gateway.ts';
import type { SessionRegistry } from './mcp/session-registry.ts';

export type RunningGateway = Infrastructure & {
  /** `http://host:port` the agent port listens on. */
  address: string;
  /** The live MCP sessions of this gateway. */
  sessions: SessionRegistry;
  /** The OAuth bridge's switch; `reload()` reads the saved public origin again. */
  bridge: BridgeSwitch;
  /** This process's counters, published to Redis for the Console's `/metrics`. */
  metrics: Metrics;
};

/** Opens the parts in order; if one fails, closes what was opened, newest first, and rethrows. */
async function openInOrder<T>(steps: (opened: Array<{ close(): Promise<void> }>) => Promise<T>): Promise<T> {
  const opened: Array<{ close(): Promise<void> }> = [];
  try {
    return await steps(opened);
  } catch (error) {
    for (const resource of opened.reverse()) await resource.close();
    throw error;
  }
}

/** `now` is the gateway's clock (key deadlines, the refusal cap's windows); tests move it. Default: the real one. */
export async function startGateway(config: GatewayConfig, log: Logger, options: { now?: () => Date } = {}): Promise<RunningGateway> {
  const app = buildApp({ log, trustedProxies: config.MCP_TRUSTED_PROXIES });
  const metrics = createMetrics();
  const { infra, live, bridge, mcp, address } = await openInOrder(async (opened) => {
    const infra = await openInfrastructure(config, 'gateway', log);
    opened.push(infra);
    const live = liveRequesterOnFirstUse(config, log);
    opened.push(live);
    const bridge = await openBridgeSwitch({ db: infra.db, settings: config, log });
    opened.push(bridge);
    const mcp = await registerMcpGateway(app, { config, log, db: infra.db, direct: infra.direct, redis: infra.redis, live, bridge, metrics, now: options.now, auditSpoolDir: config.DATA_DIR });
    opened.push(mcp);
    const address = await app.listen({ host: config.BIND_HOST, port: config.MCP_HTTP_PORT });
    return { infra, live, bridge, mcp, address };
  });
  const heartbeat = startHeartbeat(infra.redis, () => ({ address: `${address}/mcp`, sessions: mcp.registry.size }));
  const publisher = startMetricsPublisher({ redis: infra.redis, metrics, service: 'gateway', everyMs: config.METRICS_PUBLISH_MS, log });
  return {
    ...infra,
    address,
    sessions: mcp.registry,
    bridge,
    metrics,
    async close() {
      // Stop taking requests, end the sessions (their streams would hold app.close open), then release.
      await heartbeat.stop();
      const closing = app.close();
      await mcp.close();
      await closing;
      await bridge.close();
      await live.close();
      await publisher.stop();
      await infra.close();
    },
  };
}
