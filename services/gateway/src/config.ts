import { z } from 'zod';
import { agentPortConfig, auditConfig, bindConfig, dbConfig, logConfig, metricsConfig, redisConfig } from '@pcg/shared/config';
import { liveConfig } from '@pcg/shared/queues';

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

export const gatewayConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...agentPortConfig.shape,
  ...auditConfig.shape,
  ...liveConfig.shape,
  ...bridgeConfig.shape,
  ...metricsConfig.shape,
});

export type GatewayConfig = ReturnType<typeof gatewayConfigSchema.parse>;
