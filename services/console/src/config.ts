import { agentPortConfig, auditConfig, bindConfig, consolePortConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';
import { credentialsConfig } from '@pcg/shared/crypto';
import { providerOriginsConfig } from '@pcg/shared/providers';
import { liveConfig } from '@pcg/shared/queues';
import { z } from 'zod';

export const consoleConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...consolePortConfig.shape,
  ...auditConfig.shape,
  /** Served as `service` by describe_context. */
  SERVICE_NAME: agentPortConfig.shape.SERVICE_NAME,
  /** The agent port: the outbound policy refuses it, like the Console's own, as a source address (issue 32). */
  MCP_HTTP_PORT: agentPortConfig.shape.MCP_HTTP_PORT,
  ...credentialsConfig.shape,
  ...liveConfig.shape,
  ...providerOriginsConfig.shape,
  /** Largest push-ingest body in bytes (413 beyond); default 16 MiB, health exports can be large. */
  INGEST_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(16 * 1024 * 1024),
});

export type ConsoleConfig = ReturnType<typeof consoleConfigSchema.parse>;
