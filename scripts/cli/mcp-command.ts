import path from 'node:path';
import { ConfigError, loadConfig } from '@pcg/shared/config';
import { createLogger } from '@pcg/shared/logger';
import { operatorStdioConfigSchema, serveOperatorStdio } from '../../services/gateway/src/stdio/operator-session.ts';
import { LaunchError, resolvePostgres, resolveRedis, type ResolvedService } from '../local-services/index.ts';
import { CommandFailed } from './cli-errors.ts';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * `pcg mcp`: the operator's stdio session (spec 5), launched by the operator's own MCP client. It finds
 * Postgres and Redis the way `npm start` does (joining the stores a running `npm start` keeps), and holds
 * them until the client closes stdin. stdout carries the protocol: everything else goes to stderr.
 */
export async function runMcpSession(env: NodeJS.ProcessEnv): Promise<void> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const dataDir = path.resolve(root, env.DATA_DIR || 'data');
  const held: ResolvedService[] = [];
  const release = async () => {
    for (const store of held.reverse()) await store.stop?.();
  };
  try {
    held.push(await resolvePostgres({ env, dataDir, log: say }));
    held.push(await resolveRedis({ env, dataDir, log: say }));
    const [postgres, redis] = held as [ResolvedService, ResolvedService];
    const config = loadConfig(operatorStdioConfigSchema, { LOG_LEVEL: 'warn', ...env, DATABASE_URL: postgres.url, REDIS_URL: redis.url });
    const log = createLogger({ name: 'operator-stdio', level: config.LOG_LEVEL, destination: process.stderr });
    const session = await serveOperatorStdio(config, log);
    const stop = () => void session.close();
    process.once('SIGINT', stop).once('SIGTERM', stop).once('SIGHUP', stop);
    await session.closed;
  } catch (error) {
    if (error instanceof LaunchError || error instanceof ConfigError) throw new CommandFailed(error.message);
    throw error;
  } finally {
    await release();
  }
}
