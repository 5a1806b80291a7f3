import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** npm run bench: every benchmark, one after another, each printing its side-by-side table. */
const root = path.resolve(import.meta.dirname, '../..');
let failed = false;
for (const name of ['query', 'audit', 'audit-verify', 'mcp']) {
  console.log(`\n=== bench:${name}`);
  const run = spawnSync(process.execPath, [path.join(root, 'scripts/bench', `${name}.ts`)], { stdio: 'inherit' });
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
