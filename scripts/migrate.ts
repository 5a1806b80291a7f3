import { withResolvedDatabase } from './local-services/index.ts';

await withResolvedDatabase(async (_databaseUrl, applied) => {
  console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'nothing to apply; the schema is up to date');
});
