import type { FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { DatabasePool } from '@pcg/shared/db';
import { createHttpApp, registerJsonErrorHandler } from '@pcg/shared/http';
import type { Logger } from '@pcg/shared/logger';
import type { Redis } from '@pcg/shared/redis';
import type { ConsoleConfig } from './config.ts';
import type { SourcesDeps } from './connections/index.ts';
import { registerConnectionRoutes } from './routes/connections.ts';
import { registerHealthzRoute } from './routes/healthz.ts';
import { registerIngestRoutes } from './routes/ingest.ts';

export type ConsoleAppDeps = {
  config: ConsoleConfig;
  log: Logger;
  db: DatabasePool;
  redis: Redis;
  /** Connections and push-ingest. */
  sources: SourcesDeps;
};

export function buildApp({ log, sources }: ConsoleAppDeps): FastifyInstance {
  const app = createHttpApp(log);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerJsonErrorHandler(app);
  registerHealthzRoute(app);
  registerConnectionRoutes(app, sources.connections);
  registerIngestRoutes(app, { ingest: sources.ingest, audit: sources.audit, bodyLimit: sources.ingestBodyLimit });
  return app;
}
