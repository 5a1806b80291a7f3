import type { Logger } from '@pcg/shared/logger';
import { openInfrastructure, type Infrastructure } from '@pcg/shared/lifecycle';
import { buildApp } from './app.ts';
import type { GatewayConfig } from './config.ts';

export type RunningGateway = Infrastructure & {
  /** `http://host:port` the agent port listens on. */
  address: string;
};

export async function startGateway(config: GatewayConfig, log: Logger): Promise<RunningGateway> {
  const infra = await openInfrastructure(config, 'gateway', log);
  const app = buildApp({ log });
  const address = await app.listen({ host: config.BIND_HOST, port: config.MCP_HTTP_PORT }).catch(async (error: unknown) => {
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
