import type { FastifyInstance } from 'fastify';
import { createAuditProducer, createRefusalThrottle } from '@pcg/shared/audit';
import { loadOrCreateSecret, type DatabasePool, type DirectPool } from '@pcg/shared/db';
import { createAgentEventPublisher, createAgentQueries, createKeyResolver, parseBearer } from '@pcg/shared/grants';
import type { LiveRequester } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import type { Metrics } from '@pcg/shared/metrics';
import type { Redis } from '@pcg/shared/redis';
import type { GatewayConfig } from '../config.ts';
import { resolveAccessToken } from '../bridge/access-tokens.ts';
import { bearerChallenge } from '../bridge/bridge-endpoints.ts';
import { registerBridgeRoutes } from '../bridge/bridge-routes.ts';
import { isAccessToken } from '../bridge/bridge-secrets.ts';
import type { BridgeSwitch } from '../bridge/bridge-switch.ts';
import { createSignInService } from '../bridge/sign-in-service.ts';
import { createTokenService } from '../bridge/token-service.ts';
import { registerOriginPolicy } from '../edge/origin-hooks.ts';
import { listenForAgentEvents } from './agent-events.ts';
import { toolListing } from './mcp-server-factory.ts';
import { registerMcpRoutes, type CredentialResult, type InitializeRefusal } from './mcp-routes.ts';
import { createModernLane } from './modern/modern-lane.ts';
import { createSessionRegistry } from './session-registry.ts';
import { createToolSet } from './tools/tool-set.ts';

/** Spec 8: open MCP sessions. */
export const MAX_SESSIONS = 512;

export type McpGatewayDeps = {
  config: GatewayConfig;
  log: Logger;
  db: DatabasePool;
  /** The same database's direct pool (the key lookup and the query engine's reads). */
  direct: DirectPool;
  redis: Redis;
  live?: LiveRequester;
  /** The OAuth bridge's on/off switch (the saved public origin). */
  bridge: BridgeSwitch;
  /** Where tool calls, their latency, live reads, sessions and bridge tokens are counted. */
  metrics: Metrics;
  now?: () => Date;
  /** `DATA_DIR` for the audit producer's spool (design 8.4); without it rows wait in memory only (tests). */
  auditSpoolDir?: string;
};

/** The settings row holding the HMAC key of the bridge's sign-in forms. */
const FORM_KEY_SETTING = 'bridge_form_key';

/**
 * Everything on the agent port: the key resolver, the session registry, the seven tools over the shared
 * services, the audit producer and refusal throttle, the agent-event listener, and the OAuth bridge. Its
 * `close` ends every session and writes what the audit producer still holds.
 */
export async function registerMcpGateway(app: FastifyInstance, deps: McpGatewayDeps) {
  const { config, log, db, direct, redis, now, bridge, metrics } = deps;
  const clock = now ?? (() => new Date());
  const producer = createAuditProducer({ redis, db, source: 'gateway', settings: config, log, spoolDir: deps.auditSpoolDir });
  metrics.watchAuditProducer(producer);
  const audit = metrics.countingRecorder(producer);
  const live = deps.live && metrics.timedLive(deps.live);
  const throttle = createRefusalThrottle({ redis, recorder: audit, log, now: () => clock().getTime() });
  const resolver = createKeyResolver({ db, direct, log });
  const agents = createAgentQueries(db);
  const agentEvents = createAgentEventPublisher(redis, config);
  const tools = createToolSet({ db, direct, audit, log, serviceName: config.SERVICE_NAME, live, now });
  const registry = createSessionRegistry({ maxSessions: MAX_SESSIONS, idleMs: config.MCP_SESSION_IDLE_MS, log });
  metrics.watchSessions(() => registry.size);

  /** An agent key, or a bridge access token (`pcgat_`) for the same grant row. */
  async function resolveCredential(header: string | undefined): Promise<CredentialResult> {
    const credential = parseBearer(header);
    if (credential.kind === 'none') return { ok: false, reason: 'missing' };
    if (isAccessToken(credential.token)) {
      const resolved = await resolveAccessToken(db, credential.token, bridge.current(), clock());
      return resolved.ok ? { ok: true, grant: resolved.grant, validUntil: resolved.tokenExpiresAt } : resolved;
    }
    const resolved = await resolver.resolveKey(credential.token, clock());
    return resolved.ok ? { ok: true, grant: resolved.grant, validUntil: null } : { ok: false, reason: resolved.reason };
  }

  const onInitializeRefused = (refusal: InitializeRefusal) => {
    // Spec 6: a presented and refused key always leaves a row (through the throttle); a call with no
    // key leaves one only while the OAuth bridge is on.
    if (!refusal.keyPresented && !bridge.current()) return;
    throttle.record('initialize', {
      agentId: null,
      tool: 'initialize',
      sector: null,
      decision: 'deny',
      denyReason: refusal.denyReason,
      args: {},
      outcome: 'error',
    });
  };

  // First: the Host and Origin checks run before any route of the agent port (design 7.3).
  registerOriginPolicy(app, {
    publicOrigin: () => bridge.current()?.origin ?? null,
    allowedOrigins: config.MCP_ALLOWED_ORIGINS,
    allowedHosts: config.MCP_ALLOWED_HOSTS,
  });
  const server = { serviceName: config.SERVICE_NAME, tools, listing: toolListing(tools), log, timeTool: (tool: string) => metrics.toolSeconds.startTimer({ tool }) };
  const challenge = (refused?: string) => {
    const endpoints = bridge.current();
    return endpoints ? bearerChallenge(endpoints, refused === undefined ? undefined : { description: refused }) : undefined;
  };
  // Design 8.1: the modern lane's requests in flight stand in for the 512 sessions.
  const modern = config.MCP_MODERN_ERA
    ? createModernLane({ server, resolveAuthorization: resolveCredential, challenge, onInitializeRefused, maxInFlight: MAX_SESSIONS, log })
    : undefined;
  registerMcpRoutes(app, {
    registry,
    server,
    resolveAuthorization: resolveCredential,
    challenge,
    modern,
    now: clock,
    currentGeneration: (agentId) => agents.liveGeneration(agentId),
    onInitializeRefused,
    log,
  });
  await registerBridgeRoutes(app, {
    current: () => bridge.current(),
    signIn: createSignInService({ db, resolver, now }),
    tokens: createTokenService({
      db,
      replayGraceMs: config.BRIDGE_REFRESH_REPLAY_GRACE_SECONDS * 1000,
      onChainRevoked: async (agent) => {
        await agentEvents.publish({ agent, kind: 'bridge_tokens_revoked' }).catch((error: unknown) => log.warn({ err: error, agent }, 'agent event not published'));
      },
      now,
    }),
    formKey: await loadOrCreateSecret(db, FORM_KEY_SETTING),
    serviceName: config.SERVICE_NAME,
    audit,
    throttle,
    redis,
    log,
    now,
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
