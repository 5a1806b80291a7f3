import { existsSync } from 'node:fs';
import path from 'node:path';
import { ensureDatabase, runMigrations } from '@pcg/shared/db';
import { LaunchError, resolvePostgres } from './local-services/index.ts';

const root = path.resolve(import.meta.dirname, '..');
if (existsSync(path.join(root, '.env'))) process.loadEnvFile(path.join(root, '.env'));

const postgres = await resolvePostgres({
  env: process.env,
  dataDir: path.resolve(root, process.env.DATA_DIR || 'data'),
  log: (line) => console.log(line),
}).catch((error: unknown) => {
  console.error(error instanceof LaunchError ? error.message : error);
  process.exit(1);
});
try {
  await ensureDatabase(postgres.url);
  const applied = await runMigrations(postgres.url);
  console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'nothing to apply; the schema is up to date');
} finally {
  await postgres.stop?.();
}
