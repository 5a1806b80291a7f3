import type { FastifyInstance } from 'fastify';
import type { DatabasePool } from 'slonik';
import { createAuditProducer, createRefusalThrottle } from '@pcg/shared/audit';
import { createAgentQueries, createKeyResolver } from '@pcg/shared/grants';
import type { LiveRequester } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import { createQueryEngine } from '@pcg/shared/query';
import { createActionsService, createReadService } from '@pcg/shared/reads';
import type { Redis } from '@pcg/shared/redis';
import type { GatewayConfig } from '../config.ts';
import { listenForAgentEvents } from './agent-events.ts';
import { toolListing } from './mcp-server-factory.ts';
import { registerMcpRoutes, type InitializeRefusal } from './mcp-routes.ts';
import { createSessionRegistry } from './session-registry.ts';
import { actionTools } from './tools/action-tools.ts';
import { readTools } from './tools/read-tools.ts';

/** Spec 8: open MCP sessions. */
export const MAX_SESSIONS = 512;

export type McpGatewayDeps = {
  config: GatewayConfig;
  log: Logger;
  db: DatabasePool;
  redis: Redis;
  live?: LiveRequester;
  now?: () => Date;
};

/**
 * Everything behind /mcp: the key resolver, the session registry, the seven tools over the shared
 * services, the audit producer and refusal throttle, and the agent-event listener. Its `close` ends
 * every session and writes what the audit producer still holds.
 */
export async function registerMcpGateway(app: FastifyInstance, deps: McpGatewayDeps) {
  const { config, log, db, redis, live, now } = deps;
  const audit = createAuditProducer({ redis, settings: config, log });
  const throttle = createRefusalThrottle({ redis, recorder: audit, log });
  const resolver = createKeyResolver({ db, log });
  const agents = createAgentQueries(db);
  const reads = createReadService({ db, engine: createQueryEngine({ db }), audit, log, serviceName: config.SERVICE_NAME, live, now });
  const actions = createActionsService({ db, audit, log, live, now });
  const tools = [...readTools(reads), ...actionTools(actions)];
  const registry = createSessionRegistry({ maxSessions: MAX_SESSIONS, idleMs: config.MCP_SESSION_IDLE_MS, log });

  const onInitializeRefused = (refusal: InitializeRefusal) => {
    // Spec 6: a presented and refused key always leaves a row (through the throttle); a call with no
    // key leaves one only when the OAuth bridge is on, which it is not yet.
    if (!refusal.keyPresented) return;
    throttle.record('initialize', {
      agentId: null,
      tool: 'initialize',
      sector: null,
      decision: 'deny',
      denyReason: refusal.reason,
      args: {},
      outcome: 'error',
    });
  };

  registerMcpRoutes(app, {
    registry,
    server: { serviceName: config.SERVICE_NAME, tools, listing: toolListing(tools), log },
    resolveAuthorization: (header) => resolver.resolveAuthorization(header, now?.()),
    currentGeneration: (agentId) => agents.liveGeneration(agentId),
    onInitializeRefused,
    log,
  });
  const events = await listenForAgentEvents({ settings: config, db, registry, log });

  return {
    registry,
    async close() {
      await registry.closeAll('gateway stopping');
      await events.close();
      await throttle.drain();
      await audit.drain();
    },
  };
}
