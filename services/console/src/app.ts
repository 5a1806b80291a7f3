import type { FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { DatabasePool } from '@pcg/shared/db';
import { createHttpApp, registerJsonErrorHandler } from '@pcg/shared/http';
import type { Logger } from '@pcg/shared/logger';
import type { Redis } from '@pcg/shared/redis';
import type { ConsoleConfig } from './config.ts';
import { registerAuditRoutes } from './routes/audit.ts';
import { registerHealthzRoute } from './routes/healthz.ts';

export type ConsoleAppDeps = {
  config: ConsoleConfig;
  log: Logger;
  db: DatabasePool;
  redis: Redis;
};

export function buildApp({ log, db }: ConsoleAppDeps): FastifyInstance {
  const app = createHttpApp(log);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerJsonErrorHandler(app);
  registerHealthzRoute(app);
  registerAuditRoutes(app, { db });
  return app;
}
