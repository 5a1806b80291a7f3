import { createServer } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { createAuditProducer, type AuditRecorder } from '@pcg/shared/audit';
import type { DatabasePool } from '@pcg/shared/db';
import { createAgentEventPublisher, createAgentService, createKeyResolver } from '@pcg/shared/grants';
import { createHttpApp, registerJsonErrorHandler } from '@pcg/shared/http';
import type { LiveRequester } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import { createQueryEngine } from '@pcg/shared/query';
import type { SyncProducer } from '@pcg/shared/queues';
import { createReadService } from '@pcg/shared/reads';
import type { Redis } from '@pcg/shared/redis';
import { createSettingsEventPublisher, createSettingsService } from '@pcg/shared/settings';
import type { ConsoleConfig } from './config.ts';
import { createSourcesDeps } from './connections/index.ts';
import { registerHostCheck } from './host-check/host-check.ts';
import { registerAgentRoutes } from './routes/agents.ts';
import { registerAuditRoutes } from './routes/audit.ts';
import { registerAuditVerifyRoute } from './routes/audit-verify.ts';
import { registerConnectionRoutes } from './routes/connections.ts';
import { registerHealthzRoute } from './routes/healthz.ts';
import { registerIngestRoutes } from './routes/ingest.ts';
import { registerMirrorRoutes } from './routes/mirror.ts';
import { registerOperatorReadRoutes } from './routes/operator-reads.ts';
import { registerSettingsRoutes } from './routes/settings.ts';
import { registerStatusRoute } from './routes/status.ts';

export type ConsoleAppDeps = {
  config: ConsoleConfig;
  log: Logger;
  db: DatabasePool;
  /** A `commands` client; agent events are published and audit rows queued through it. */
  redis: Redis;
  /** The clock deadlines and statuses are computed from; default the system clock. */
  now?: () => Date;
  /** Live reads through the sync-worker; without it fetch_live says live reads are unavailable. */
  live?: LiveRequester;
  /** Where audit rows go; default a producer on `redis`, drained when the app closes. */
  audit?: AuditRecorder;
  /** The sync producer and credentials key behind the connection routes and push-ingest; without them those routes are absent. */
  sources?: { sync: Pick<SyncProducer, 'schedule' | 'unschedule' | 'requestSync'>; credentialsKey: Buffer };
};

export function buildApp({ config, log, db, redis, now, live, audit: givenAudit, sources }: ConsoleAppDeps): FastifyInstance {
  // Node answers a Host-less HTTP/1.1 request with its own 400 unless told not to; the Host check
  // answers it with the 403 of spec 5 instead.
  const app = createHttpApp(log, { serverFactory: (handler) => createServer({ requireHostHeader: false }, handler) });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerJsonErrorHandler(app);
  registerHostCheck(app, { allowedHosts: config.REST_ALLOWED_HOSTS });

  let audit = givenAudit;
  if (!audit) {
    const producer = createAuditProducer({ redis, db, source: 'console', settings: config, log });
    // Rows still being pushed to Redis are written before the connections close.
    app.addHook('onClose', async () => producer.drain());
    audit = producer;
  }
  const agents = createAgentService({ db, events: createAgentEventPublisher(redis, config), log, now });
  const resolver = createKeyResolver({ db, log });
  const reads = createReadService({ db, engine: createQueryEngine({ db }), audit, log, serviceName: config.SERVICE_NAME, live, now });

  registerHealthzRoute(app);
  registerAgentRoutes(app, { agents });
  registerAuditRoutes(app, { db });
  registerAuditVerifyRoute(app, { db, dataDir: config.DATA_DIR });
  registerMirrorRoutes(app, { reads, resolveAuthorization: (header) => resolver.resolveAuthorization(header, now?.()) });
  registerOperatorReadRoutes(app, { reads });
  registerStatusRoute(app, { db, redis, settings: config, log });
  registerSettingsRoutes(app, { settings: createSettingsService({ db, events: createSettingsEventPublisher(redis, config), audit, log }) });
  if (sources) {
    const deps = createSourcesDeps({ db, ...sources, audit, log, ingestBodyLimit: config.INGEST_BODY_LIMIT_BYTES });
    registerConnectionRoutes(app, deps.connections);
    registerIngestRoutes(app, { ingest: deps.ingest, audit: deps.audit, bodyLimit: deps.ingestBodyLimit });
  }
  return app;
}
