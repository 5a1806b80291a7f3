import { z } from 'zod';
import { agentPortConfig, auditConfig, bindConfig, dataDirConfig, dbConfig, logConfig, metricsConfig, redisConfig } from '@pcg/shared/config';
import { parseHost } from '@pcg/shared/http';
import { liveConfig } from '@pcg/shared/queues';
import { parseOrigin } from './edge/origin-policy.ts';

/** The longest replay grace allowed: seconds, not minutes, so a stolen spent token stays near useless. */
export const MAX_REFRESH_REPLAY_GRACE_SECONDS = 60;

export const bridgeConfig = z.object({
  /**
   * Seconds during which a just-rotated refresh token, presented again, gets the same new pair instead of
   * revoking its chain (a lost answer, a client refreshing from two nodes at once). Default 0: off.
   */
  BRIDGE_REFRESH_REPLAY_GRACE_SECONDS: z.coerce
    .number({ error: 'must be a number of seconds' })
    .int({ error: 'must be a whole number of seconds' })
    .min(0, { error: `must be from 0 (off) to ${MAX_REFRESH_REPLAY_GRACE_SECONDS}` })
    .max(MAX_REFRESH_REPLAY_GRACE_SECONDS, { error: `must be from 0 (off) to ${MAX_REFRESH_REPLAY_GRACE_SECONDS}` })
    .default(0),
});

const commaSeparated = z
  .string()
  .default('')
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0),
  );

/** Design 7.3: who may reach /mcp (and the bridge routes) besides loopback and the saved public origin. */
export const originPolicyConfig = z.object({
  /**
   * Origins (`https://chatgpt.com`) whose browser pages may call the agent port, besides loopback origins
   * and the saved public origin; they also get CORS answers. Default none.
   */
  MCP_ALLOWED_ORIGINS: commaSeparated.pipe(
    z.array(
      z.string().transform((entry, context) => {
        const origin = parseOrigin(entry.replace(/\/$/, '').toLowerCase());
        if (origin === null) context.addIssue({ code: 'custom', message: `'${entry}' is not an origin (scheme://host[:port], nothing after it)` });
        return origin ?? entry;
      }),
    ),
  ),
  /** Host names (optionally `name:port`) the agent port accepts besides loopback names and the public origin's host. Default none. */
  MCP_ALLOWED_HOSTS: commaSeparated.pipe(
    z.array(z.string().refine((entry) => parseHost(entry) !== null, { error: (issue) => `'${String(issue.input)}' is not a host name, with an optional :port` })),
  ),
});

/** Design 8.1: the stateless MCP revision (2026-07-28) on /mcp beside the specification's sessions. */
export const modernEraConfig = z.object({
  /**
   * Serve requests that declare MCP revision 2026-07-28 (no `initialize`, no session). `false` answers them
   * as spec 7 answers any request without a session (400 -32000 `Missing or invalid Mcp-Session-Id`). Default true.
   */
  MCP_MODERN_ERA: z.enum(['true', 'false'], { error: "must be 'true' or 'false'" }).default('true').transform((value) => value === 'true'),
});

export const gatewayConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...agentPortConfig.shape,
  ...auditConfig.shape,
  ...liveConfig.shape,
  ...bridgeConfig.shape,
  ...originPolicyConfig.shape,
  ...modernEraConfig.shape,
  ...metricsConfig.shape,
  // The audit producer's spool (design 8.4).
  ...dataDirConfig.shape,
});

export type GatewayConfig = ReturnType<typeof gatewayConfigSchema.parse>;
