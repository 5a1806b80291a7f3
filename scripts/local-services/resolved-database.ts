import { existsSync } from 'node:fs';
import path from 'node:path';
import { ensureDatabase, runMigrations } from '@pcg/shared/db';
import { LaunchError, resolvePostgres } from './resolve-services.ts';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * For the project's command-line scripts: reads `.env`, finds Postgres the way `npm start` does (joining
 * the embedded Postgres a running `npm start` keeps, or starting it for the time of the script), creates
 * and migrates the database, and runs `work` with its URL. A problem the operator must fix is printed as
 * one line, with exit status 1.
 */
export async function withResolvedDatabase<T>(work: (databaseUrl: string, applied: string[]) => Promise<T>): Promise<T> {
  if (existsSync(path.join(root, '.env'))) process.loadEnvFile(path.join(root, '.env'));
  const postgres = await resolvePostgres({
    env: process.env,
    dataDir: path.resolve(root, process.env.DATA_DIR || 'data'),
    log: (line) => process.stdout.write(`${line}\n`),
  }).catch((error: unknown) => {
    process.stderr.write(`${error instanceof LaunchError ? error.message : String(error)}\n`);
    process.exit(1);
  });
  try {
    await ensureDatabase(postgres.url);
    const applied = await runMigrations(postgres.url);
    return await work(postgres.url, applied);
  } finally {
    await postgres.stop?.();
  }
}
