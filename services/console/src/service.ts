import type { Logger } from '@pcg/shared/logger';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import { buildApp } from './app.ts';
import type { ConsoleConfig } from './config.ts';

export type RunningConsole = Infrastructure & {
  /** `http://host:port` the Console port listens on. */
  address: string;
};

export async function startConsole(config: ConsoleConfig, log: Logger): Promise<RunningConsole> {
  const infra = await openInfrastructure(config, 'console', log);
  const app = buildApp({ config, log, db: infra.db, redis: infra.redis });
  const address = await app.listen({ host: config.BIND_HOST, port: config.REST_PORT }).catch(async (error: unknown) => {
    await infra.close();
    throw error;
  });
  return {
    ...infra,
    address,
    async close() {
      await app.close();
      await infra.close();
    },
  };
}
