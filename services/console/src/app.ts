import { createServer } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { DatabasePool } from '@pcg/shared/db';
import { createAuditProducer } from '@pcg/shared/audit';
import { createAgentEventPublisher, createAgentService, createKeyResolver } from '@pcg/shared/grants';
import { createHttpApp, registerJsonErrorHandler } from '@pcg/shared/http';
import type { LiveRequester } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import { createQueryEngine } from '@pcg/shared/query';
import { createReadService } from '@pcg/shared/reads';
import type { Redis } from '@pcg/shared/redis';
import type { ConsoleConfig } from './config.ts';
import { registerHostCheck } from './host-check/host-check.ts';
import { registerAgentRoutes } from './routes/agents.ts';
import { registerAuditRoutes } from './routes/audit.ts';
import { registerHealthzRoute } from './routes/healthz.ts';
import { registerMirrorRoutes } from './routes/mirror.ts';
import { registerOperatorReadRoutes } from './routes/operator-reads.ts';

export type ConsoleAppDeps = {
  config: ConsoleConfig;
  log: Logger;
  db: DatabasePool;
  /** A `commands` client; agent events are published through it. */
  redis: Redis;
  /** The clock deadlines and statuses are computed from; default the system clock. */
  now?: () => Date;
  /** Live reads through the sync-worker; without it fetch_live says live reads are unavailable. */
  live?: LiveRequester;
};

export function buildApp({ config, log, db, redis, now, live }: ConsoleAppDeps): FastifyInstance {
  // Node answers a Host-less HTTP/1.1 request with its own 400 unless told not to; the Host check
  // answers it with the 403 of spec 5 instead.
  const app = createHttpApp(log, { serverFactory: (handler) => createServer({ requireHostHeader: false }, handler) });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerJsonErrorHandler(app);
  registerHostCheck(app, { allowedHosts: config.REST_ALLOWED_HOSTS });

  const audit = createAuditProducer({ redis, settings: config, log });
  // Rows still being pushed to Redis are written before the connections close.
  app.addHook('onClose', async () => audit.drain());
  const agents = createAgentService({ db, events: createAgentEventPublisher(redis, config), log, now });
  const resolver = createKeyResolver({ db, log });
  const reads = createReadService({ db, engine: createQueryEngine({ db }), audit, log, serviceName: config.SERVICE_NAME, live, now });

  registerHealthzRoute(app);
  registerAgentRoutes(app, { agents });
  registerAuditRoutes(app, { db });
  registerMirrorRoutes(app, { reads, resolveAuthorization: (header) => resolver.resolveAuthorization(header, now?.()) });
  registerOperatorReadRoutes(app, { reads });
  return app;
}
