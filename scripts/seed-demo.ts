import { existsSync } from 'node:fs';
import path from 'node:path';
import { ensureDatabase, openDatabase, runMigrations } from '@pcg/shared/db';
import { seedDemo } from './demo/seed.ts';
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
  await runMigrations(postgres.url);
  const db = await openDatabase(postgres.url);
  try {
    const started = Date.now();
    const counts = await seedDemo(db);
    for (const [object, count] of Object.entries(counts)) console.log(`${object.padEnd(22)} ${count}`);
    console.log(`demo data written in ${((Date.now() - started) / 1000).toFixed(1)} s (re-running updates the same rows)`);
  } finally {
    await db.end();
  }
} finally {
  await postgres.stop?.();
}
