import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  agentPortConfig,
  auditConfig,
  bindConfig,
  consolePortConfig,
  dataDirConfig,
  dbConfig,
  configIssues,
  loadConfig,
  logConfig,
  redisConfig,
} from '@pcg/shared/config';
import { credentialsConfig } from '@pcg/shared/crypto';
import { ensureDatabase, runMigrations } from '@pcg/shared/db';
import { pickLogFormat } from '@pcg/shared/logger';
import { SupervisedChild } from './launcher/child-process.ts';
import { createLauncherOutput } from './launcher/log-output.ts';
import { preflight } from './launcher/preflight.ts';
import { serviceSettingsIssues } from './launcher/service-settings.ts';
import { LaunchError, resolvePostgres, resolveRedis, type ResolvedService } from './local-services/index.ts';

const SERVICES = ['console', 'gateway', 'audit-writer', 'sync-worker'] as const;
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const root = path.resolve(import.meta.dirname, '..');

/** The settings the launcher itself uses; every service's own are checked too before anything starts (service-settings.ts). */
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

function loadLaunchConfig() {
  const issues = [...new Set([...configIssues(launchConfigSchema), ...serviceSettingsIssues({ ...process.env, LOG_FORMAT: 'json' })])];
  if (issues.length > 0) {
    process.stderr.write(`[launcher] invalid configuration, nothing was started:\n${issues.map((issue) => `  - ${issue}`).join('\n')}\n`);
    process.exit(1);
  }
  return loadConfig(launchConfigSchema);
}

async function main(): Promise<void> {
  if (existsSync(path.join(root, '.env'))) process.loadEnvFile(path.join(root, '.env'));
  const config = loadLaunchConfig();
  const { log, serviceLine } = createLauncherOutput(pickLogFormat(config.LOG_FORMAT), config.LOG_LEVEL);
  const dataDir = path.resolve(root, config.DATA_DIR);
  const stores: ResolvedService[] = [];
  const children: SupervisedChild[] = [];
  let stopping = false;

  // The services first (they still write to the stores while they stop), the stores last.
  const stopAll = async (status: number) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping');
    await Promise.all(children.map((child) => child.stop()));
    await Promise.all(stores.map((store) => store.stop?.()));
    log.info({ status }, 'stopped');
    process.exit(status);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, () => void stopAll(0));

  try {
    await preflight(config, dataDir);
    const say = (line: string) => log.info(line);
    const postgres = await resolvePostgres({ env: process.env, dataDir, log: say });
    stores.push(postgres);
    if (await ensureDatabase(postgres.url)) log.info({ database: new URL(postgres.url).pathname.slice(1) }, `created database ${new URL(postgres.url).pathname.slice(1)}`);
    const applied = await runMigrations(postgres.url);
    log.info(applied.length > 0 ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date');
    const redis = await resolveRedis({ env: process.env, dataDir, log: say });
    stores.push(redis);
    for (const [store, name] of [[postgres, 'Postgres'], [redis, 'Redis']] as const) {
      store.onLost?.(() => {
        log.error({ dataDir }, `the ${name} of this data folder stopped while in use (its log is in DATA_DIR); stopping everything`);
        void stopAll(1);
      });
    }
    log.info({ postgres: postgres.origin, redis: redis.origin }, `postgres: ${postgres.origin}; redis: ${redis.origin}`);
    if (stopping) return;

    // One data directory for every service, whatever their working directory (the credentials key lives there).
    // The services always write JSON: this launcher formats their lines with its own.
    const env = { ...process.env, DATABASE_URL: postgres.url, REDIS_URL: redis.url, DATA_DIR: dataDir, LOG_FORMAT: 'json' };
    const ready = new Set<string>();
    let announced = false;
    for (const name of SERVICES) {
      const child = new SupervisedChild(
        { name, entry: path.join(root, 'services', name, 'src', 'main.ts'), env },
        {
          log,
          line: serviceLine,
          ready(service) {
            ready.add(service);
            if (announced || !ready.has('console') || !ready.has('gateway')) return;
            announced = true;
            log.info(`console on http://${config.BIND_HOST}:${config.REST_PORT}, agents on http://${config.BIND_HOST}:${config.MCP_HTTP_PORT}/mcp; Ctrl-C stops everything`);
          },
          spawned() {
            const pids = children.flatMap((supervised) => (supervised.pid ? [supervised.pid] : []));
            for (const store of stores) store.hold?.(pids);
          },
          gaveUp(_service, reason) {
            log.error(`${reason}; stopping everything`);
            void stopAll(1);
          },
        },
      );
      children.push(child);
      child.start();
    }
  } catch (error) {
    if (error instanceof LaunchError) log.error(error.message);
    else log.error({ err: error }, 'the launcher failed');
    await stopAll(1);
  }
}

await main();
