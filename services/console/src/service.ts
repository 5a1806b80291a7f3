import type { AuditRecorder } from '@pcg/shared/audit';
import { loadCredentialsKey } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import { openSyncProducer } from '@pcg/shared/queues';
import { buildApp } from './app.ts';
import type { ConsoleConfig } from './config.ts';
import { createSourcesDeps, logOnlyAuditRecorder } from './connections/index.ts';

export type RunningConsole = Infrastructure & {
  /** `http://host:port` the Console port listens on. */
  address: string;
};

export async function startConsole(config: ConsoleConfig, log: Logger, options: { audit?: AuditRecorder } = {}): Promise<RunningConsole> {
  const credentialsKey = await loadCredentialsKey(config, log);
  const infra = await openInfrastructure(config, 'console', log);
  const sync = await openSyncProducer(config, log).catch(async (error: unknown) => {
    await infra.close();
    throw error;
  });
  const audit = options.audit ?? logOnlyAuditRecorder(log);
  const sources = createSourcesDeps({ db: infra.db, sync, credentialsKey, audit, log, ingestBodyLimit: config.INGEST_BODY_LIMIT_BYTES });
  const app = buildApp({ config, log, db: infra.db, redis: infra.redis, sources });
  const address = await app.listen({ host: config.BIND_HOST, port: config.REST_PORT }).catch(async (error: unknown) => {
    await sync.close();
    await infra.close();
    throw error;
  });
  return {
    ...infra,
    address,
    async close() {
      await app.close();
      await sync.close();
      await infra.close();
    },
  };
}
