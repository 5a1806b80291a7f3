import type { AuditRecorder } from '@pcg/shared/audit';
import { loadCredentialsKey } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import { createCheckRequester, createLiveRequester, createSignInRequester, openSyncProducer } from '@pcg/shared/queues';
import { buildApp } from './app.ts';
import type { ConsoleConfig } from './config.ts';

export type RunningConsole = Infrastructure & {
  /** `http://host:port` the Console port listens on. */
  address: string;
};

/** Starts the Console. `audit` replaces the Redis audit producer (tests collect rows with it). */
export async function startConsole(config: ConsoleConfig, log: Logger, options: { audit?: AuditRecorder } = {}): Promise<RunningConsole> {
  const credentialsKey = await loadCredentialsKey(config, log);
  const infra = await openInfrastructure(config, 'console', log);
  const opened: Array<{ close(): Promise<void> }> = [];
  try {
    const sync = await openSyncProducer(config, log);
    opened.push(sync);
    const live = await createLiveRequester(config, log, { timeoutMs: config.LIVE_TIMEOUT_MS });
    opened.push(live);
    // A code exchange includes the provider's token and account answers: twice a live read's time.
    const signIns = await createSignInRequester(config, log, config.LIVE_TIMEOUT_MS * 2);
    opened.push(signIns);
    const checks = await createCheckRequester(config, log);
    opened.push(checks);
    const app = buildApp({ config, log, db: infra.db, direct: infra.direct, redis: infra.redis, live, audit: options.audit, sources: { sync, credentialsKey, signIns, checks }, auditSpoolDir: config.DATA_DIR });
    const address = await app.listen({ host: config.BIND_HOST, port: config.REST_PORT });
    return {
      ...infra,
      address,
      async close() {
        await app.close();
        for (const resource of opened.reverse()) await resource.close();
        await infra.close();
      },
    };
  } catch (error) {
    for (const resource of opened.reverse()) await resource.close();
    await infra.close();
    throw error;
  }
}
