import path from 'node:path';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * The vitest configuration Stryker runs (stryker.config.mjs): the suite's own, narrowed to the tests of the
 * core modules, and without the requirements-map reporter, which judges only a whole `npm test` and fails any
 * partial run. The global setup (a migrated template database) and the no-internet setup stay: the query and
 * audit tests use Postgres and Redis.
 *
 * `@pcg/shared/<domain>` is resolved to this tree's shared/ rather than through node_modules' symlink to the
 * original: in Stryker's sandbox the symlink would load a second, unmutated copy of shared beside the sandbox's,
 * so what a test reaches through the testkit would not be the code under mutation, and the two copies' classes
 * would not be each other's (an error thrown by one fails the other's `instanceof`). Outside a sandbox both
 * name the same files.
 *
 * What a mutant costs is mostly starting its tests, not running them (docs/mutation.md, Wall time), so:
 * - `isolate: false`: Stryker runs one worker (maxWorkers 1) per mutant, and the files of that run share it
 *   and their modules instead of a worker and a fresh module graph each. Runtime mutants are switched by a
 *   global that Stryker sets before each file, so no module needs to load again; static mutants, which would,
 *   are ignored (stryker.config.mjs). The few files that assert process-wide state (OWN_WORKER) keep a
 *   worker of their own, in a second project: sharing would fail them and count a mutant as killed falsely.
 * - `@pcg/testkit/testing` is scripts/mutate-test-environment.ts: for the shards that ask for it, a file's
 *   database is reused from run to run and put back into the template's state, instead of cloned and dropped
 *   for every mutant; scripts/mutate-databases.ts drops those databases when the run ends.
 */
const root = import.meta.dirname;
const CORE_TESTS = [
  'shared/src/{query,validation,grants,reads,audit}/**/*.test.ts',
  'shared/src/finance/transaction-matching.test.ts',
  'services/gateway/test/**/*.test.ts',
];
// Test files that assert process-wide state from a fresh process, and so get a worker of their own: the query
// engine names at most 64 statement texts per process, which the other query files would have used up.
const OWN_WORKER = ['shared/src/query/statement-names.test.ts'];
const shared = path.join(root, 'shared/src');

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@pcg\/shared\/([\w-]+)$/, replacement: `${shared}/$1/index.ts` },
      { find: /^@pcg\/testkit\/testing$/, replacement: path.join(root, 'scripts/mutate-test-environment.ts') },
    ],
  },
  test: {
    ...base.test,
    // Each project below names its own files (a project's include and exclude add to these).
    include: [],
    globalSetup: [...[base.test?.globalSetup ?? []].flat(), 'scripts/mutate-databases.ts'],
    reporters: ['default'],
    projects: [
      // A shard that needs fresh module graphs (scripts/mutate-shards.ts, `isolated`) says so by PCG_MUTATE_ISOLATE.
      { extends: true, test: { name: 'shared-worker', include: CORE_TESTS, exclude: OWN_WORKER, isolate: process.env.PCG_MUTATE_ISOLATE === '1' } },
      { extends: true, test: { name: 'own-worker', include: OWN_WORKER, isolate: true } },
    ],
  },
});
