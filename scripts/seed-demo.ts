import { openDatabase } from '@pcg/shared/db';
import { seedDemo } from './demo/seed.ts';
import { withResolvedDatabase } from './local-services/index.ts';

await withResolvedDatabase(async (databaseUrl) => {
  const database = await openDatabase(databaseUrl);
  try {
    const started = Date.now();
    const counts = await seedDemo(database.pool);
    for (const [object, count] of Object.entries(counts)) console.log(`${object.padEnd(22)} ${count}`);
    console.log(`demo data written in ${((Date.now() - started) / 1000).toFixed(1)} s (re-running updates the same rows)`);
  } finally {
    await database.end();
  }
});
