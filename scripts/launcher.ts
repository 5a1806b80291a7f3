import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  agentPortConfig,
  auditConfig,
  bindConfig,
  consolePortConfig,
  dataDirConfig,
  dbConfig,
  loadConfig,
  ConfigError,
  logConfig,
  redisConfig,
} from '@pcg/shared/config';
import { credentialsConfig } from '@pcg/shared/crypto';
import { ensureDatabase, runMigrations } from '@pcg/shared/db';
import { SupervisedChild } from './launcher/child-process.ts';
import { LaunchError, resolvePostgres, resolveRedis, type ResolvedService } from './local-services/index.ts';

const SERVICES = ['console', 'gateway', 'audit-writer', 'sync-worker'] as const;
const root = path.resolve(import.meta.dirname, '..');
const say = (line: string) => process.stdout.write(`${line}\n`);

/** Every variable any service reads, checked before anything starts. */
const launchConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...bindConfig.shape,
  ...consolePortConfig.shape,
  ...agentPortConfig.shape,
  ...auditConfig.shape,
  ...dataDirConfig.shape,
  ...credentialsConfig.shape,
});

async function main(): Promise<void> {
  if (existsSync(path.join(root, '.env'))) process.loadEnvFile(path.join(root, '.env'));
  let config: ReturnType<typeof launchConfigSchema.parse>;
  try {
    config = loadConfig(launchConfigSchema);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`[launcher] ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  const dataDir = path.resolve(root, config.DATA_DIR);
  const started: ResolvedService[] = [];
  const children: SupervisedChild[] = [];
  let stopping = false;

  const stopAll = async (status: number) => {
    if (stopping) return;
    stopping = true;
    say('[launcher] stopping');
    await Promise.all(children.map((child) => child.stop()));
    for (const service of started.reverse()) await service.stop?.();
    say('[launcher] stopped');
    process.exit(status);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  try {
    const log = (line: string) => say(`[launcher] ${line}`);
    const postgres = await resolvePostgres({ env: process.env, dataDir, log });
    started.push(postgres);
    if (await ensureDatabase(postgres.url)) log(`created database ${new URL(postgres.url).pathname.slice(1)}`);
    const applied = await runMigrations(postgres.url);
    log(applied.length > 0 ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date');
    const redis = await resolveRedis({ env: process.env, dataDir, log });
    started.push(redis);
    log(`postgres: ${postgres.origin}; redis: ${redis.origin}`);

    // One data directory for every service, whatever their working directory (the credentials key lives there).
    const env = { ...process.env, DATABASE_URL: postgres.url, REDIS_URL: redis.url, DATA_DIR: dataDir };
    for (const name of SERVICES) {
      const child = new SupervisedChild({ name, entry: path.join(root, 'services', name, 'src', 'main.ts'), env }, say);
      children.push(child);
      child.start();
    }
    log(`console on http://${config.BIND_HOST}:${config.REST_PORT}, agents on http://${config.BIND_HOST}:${config.MCP_HTTP_PORT}/mcp; Ctrl-C stops everything`);
  } catch (error) {
    process.stderr.write(`[launcher] ${error instanceof LaunchError ? error.message : String((error as Error).stack ?? error)}\n`);
    await stopAll(1);
  }
}

await main();
