import { createServer } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { DatabasePool } from '@pcg/shared/db';
import { createAgentEventPublisher, createAgentService } from '@pcg/shared/grants';
import { createHttpApp, registerJsonErrorHandler } from '@pcg/shared/http';
import type { Logger } from '@pcg/shared/logger';
import type { Redis } from '@pcg/shared/redis';
import type { ConsoleConfig } from './config.ts';
import { registerHostCheck } from './host-check/host-check.ts';
import { registerAgentRoutes } from './routes/agents.ts';
import { registerAuditRoutes } from './routes/audit.ts';
import { registerHealthzRoute } from './routes/healthz.ts';

export type ConsoleAppDeps = {
  config: ConsoleConfig;
  log: Logger;
  db: DatabasePool;
  /** A `commands` client; agent events are published through it. */
  redis: Redis;
  /** The clock deadlines and statuses are computed from; default the system clock. */
  now?: () => Date;
};

export function buildApp({ config, log, db, redis, now }: ConsoleAppDeps): FastifyInstance {
  // Node answers a Host-less HTTP/1.1 request with its own 400 unless told not to; the Host check
  // answers it with the 403 of spec 5 instead.
  const app = createHttpApp(log, { serverFactory: (handler) => createServer({ requireHostHeader: false }, handler) });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerJsonErrorHandler(app);
  registerHostCheck(app, { allowedHosts: config.REST_ALLOWED_HOSTS });

  const agents = createAgentService({ db, events: createAgentEventPublisher(redis, config), log, now });
  registerHealthzRoute(app);
  registerAgentRoutes(app, { agents });
  registerAuditRoutes(app, { db });
  return app;
}
