import { createServer } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { createAuditProducer, type AuditRecorder } from '@pcg/shared/audit';
import type { DatabasePool, DirectPool } from '@pcg/shared/db';
import { createAgentEventPublisher, createAgentService, createKeyResolver } from '@pcg/shared/grants';
import { createAccountMatchService } from '@pcg/shared/finance';
import { createHttpApp, registerJsonErrorHandler } from '@pcg/shared/http';
import type { LiveRequester } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import { createMetrics, type Metrics } from '@pcg/shared/metrics';
import { createQueryEngine } from '@pcg/shared/query';
import type { CheckRequester, SignInRequester, SyncProducer } from '@pcg/shared/queues';
import { createReadService } from '@pcg/shared/reads';
import type { Redis } from '@pcg/shared/redis';
import { createSettingsEventPublisher, createSettingsService } from '@pcg/shared/settings';
import type { ConsoleConfig } from './config.ts';
import { createSourcesDeps } from './connections/index.ts';
import { answerFrameworkErrors, MAX_PATH_PARAM_LENGTH } from './framework-errors.ts';
import { registerHostCheck } from './host-check/host-check.ts';
import { registerAccountMatchRoutes } from './routes/account-matches.ts';
import { registerActivityRoutes } from './routes/activity.ts';
import { registerAlertDestinationRoutes } from './routes/alert-destination.ts';
import { registerAgentRoutes } from './routes/agents.ts';
import { registerAuditRoutes } from './routes/audit.ts';
import { createLedgerVerifier, registerAuditVerifyRoute } from './routes/audit-verify.ts';
import { registerConnectRoutes } from './routes/connect.ts';
import { registerConnectionRoutes } from './routes/connections.ts';
import { registerConnectionCheckRoute } from './routes/connection-check.ts';
import { createSignInService } from './sign-ins/sign-in-service.ts';
import { registerHealthzRoute } from './routes/healthz.ts';
import { refuseUndecodablePush, registerIngestRoutes } from './routes/ingest.ts';
import { registerMetricsRoute } from './routes/metrics.ts';
import { checkMirrorKey, registerMirrorRoutes } from './routes/mirror.ts';
import { registerOperatorReadRoutes } from './routes/operator-reads.ts';
import { registerSettingsRoutes } from './routes/settings.ts';
import { registerStatusRoute } from './routes/status.ts';
import { registerExportRoutes } from './routes/export.ts';
import { registerProviderRoutes } from './routes/providers.ts';
import { registerSignInRoutes } from './routes/sign-ins.ts';
import { createOriginRebaser } from '@pcg/shared/providers';
import { createAddressPolicy, gatewayOwnPorts } from '@pcg/shared/outbound';
import { registerWebRoutes } from './routes/web.ts';
import { createExportService } from './export/export-service.ts';
import { registerCrossSiteCheck } from './web/cross-site.ts';
import { registerSecurityHeaders } from './web/security-headers.ts';
import { loadWebAssets } from './web/web-assets.ts';

export type ConsoleAppDeps = {
  config: ConsoleConfig;
  log: Logger;
  db: DatabasePool;
  /** The same database's direct pool (the key lookup and the query engine's reads). */
  direct: DirectPool;
  /** A `commands` client; agent events are published and audit rows queued through it. */
  redis: Redis;
  /** `DATA_DIR` for the own audit producer's spool (design 8.4); without it rows wait in memory only (tests). */
  auditSpoolDir?: string;
  /** The clock deadlines and statuses are computed from; default the system clock. */
  now?: () => Date;
  /** Live reads through the sync-worker; without it fetch_live says live reads are unavailable. */
  live?: LiveRequester;
  /** Where audit rows go; default a producer on `redis`, drained when the app closes. */
  audit?: AuditRecorder;
  /**
   * The sync producer and credentials key behind the connection, sign-in and push-ingest routes; without
   * them those routes are absent. `signIns` awaits code exchanges on the sync-worker and takes item removals.
   */
  sources?: {
    sync: Pick<SyncProducer, 'schedule' | 'unschedule' | 'requestSync'>;
    credentialsKey: Buffer;
    signIns?: Pick<SignInRequester, 'exchange' | 'claim' | 'linkStart' | 'linkExchange' | 'removeItem'>;
    /** The connection check's jobs for the sync-worker (issue 32). */
    checks?: Pick<CheckRequester, 'check' | 'checkCredentials'>;
  };
  /** This process's counters, served with the other processes' on `/metrics`; default a new set. */
  metrics?: Metrics;
};

/** The Console's own audit producer, when none is handed in; `drain` writes what it still holds. */
function ownAuditProducer({ config, log, db, redis, metrics, auditSpoolDir }: Pick<ConsoleAppDeps, 'config' | 'log' | 'db' | 'redis' | 'auditSpoolDir'> & { metrics: Metrics }): { audit: AuditRecorder; drain: () => Promise<void> } {
  const producer = createAuditProducer({ redis, db, source: 'console', settings: config, log, spoolDir: auditSpoolDir });
  metrics.watchAuditProducer(producer);
  return { audit: producer, drain: () => producer.drain() };
}

export function buildApp({ config, log, db, direct, redis, now, live: givenLive, audit: givenAudit, sources, metrics = createMetrics(), auditSpoolDir }: ConsoleAppDeps): FastifyInstance {
  const { audit, drain } = givenAudit ? { audit: givenAudit, drain: undefined } : ownAuditProducer({ config, log, db, redis, metrics, auditSpoolDir });
  // The outbound policy for source addresses (issue 32): what the operator types is refused at save as written.
  const addressPolicy = createAddressPolicy({ ownPorts: gatewayOwnPorts(config) });
  const sourcesDeps = sources ? createSourcesDeps({ db, ...sources, audit, log, ingestBodyLimit: config.INGEST_BODY_LIMIT_BYTES, addressPolicy }) : undefined;
  const live = givenLive && metrics.timedLive(givenLive);
  const resolver = createKeyResolver({ db, direct, log });
  const resolveAuthorization = (header: string | undefined) => resolver.resolveAuthorization(header, now?.());

  const app = createHttpApp(log, {
    // Node answers a Host-less HTTP/1.1 request with its own 400 unless told not to; the Host check
    // answers it with the 403 of spec 5 instead.
    serverFactory: (handler) => createServer({ requireHostHeader: false }, handler),
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: answerFrameworkErrors({
      refuseUndecodablePush: sourcesDeps ? (request, reply) => refuseUndecodablePush(sourcesDeps.audit, request, reply) : undefined,
      mirrorKeyRefusal: async (request) => {
        const checked = await checkMirrorKey(resolveAuthorization, request.headers.authorization);
        return checked.ok ? null : checked.refusal;
      },
    }),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerJsonErrorHandler(app);
  registerHostCheck(app, { allowedHosts: config.REST_ALLOWED_HOSTS });
  registerCrossSiteCheck(app);
  registerSecurityHeaders(app);
  // Rows still being pushed to Redis are written before the connections close.
  if (drain) app.addHook('onClose', drain);

  const agents = createAgentService({ db, events: createAgentEventPublisher(redis, config), log, now });
  const engine = createQueryEngine({ db, direct });
  const reads = createReadService({ db, engine, audit, log, serviceName: config.SERVICE_NAME, live, now });

  registerHealthzRoute(app);
  registerAgentRoutes(app, { agents });
  registerAuditRoutes(app, { db });
  registerActivityRoutes(app, { db, audit });
  const verifier = createLedgerVerifier({ db, dataDir: config.DATA_DIR });
  registerAuditVerifyRoute(app, { verifier });
  registerMirrorRoutes(app, { reads, resolveAuthorization });
  registerOperatorReadRoutes(app, { reads });
  registerExportRoutes(app, { exports: createExportService({ engine, audit, now }) });
  registerProviderRoutes(app, { db });
  registerSignInRoutes(app, { db });
  registerWebRoutes(app, { assets: loadWebAssets() });
  registerStatusRoute(app, { db, redis, settings: config, log, chain: verifier });
  registerMetricsRoute(app, { db, redis, metrics, log, chain: verifier });
  registerAccountMatchRoutes(app, { accountMatches: createAccountMatchService({ db, audit }) });
  registerSettingsRoutes(app, { settings: createSettingsService({ db, events: createSettingsEventPublisher(redis, config), audit, log }) });
  if (sources && sourcesDeps) {
    registerConnectionRoutes(app, sourcesDeps.connections);
    registerAlertDestinationRoutes(app, { db, credentialsKey: sources.credentialsKey, audit, addressPolicy });
    registerConnectionCheckRoute(app, sourcesDeps.checks);
    registerConnectRoutes(
      app,
      createSignInService({
        db,
        redis,
        requester: sources.signIns,
        credentialsKey: sources.credentialsKey,
        connectionViews: sourcesDeps.connections.views,
        audit,
        log,
        rebaseUrl: createOriginRebaser(config),
        addressPolicy,
      }),
    );
    registerIngestRoutes(app, { ingest: sourcesDeps.ingest, audit: sourcesDeps.audit, bodyLimit: sourcesDeps.ingestBodyLimit });
  }
  return app;
}
