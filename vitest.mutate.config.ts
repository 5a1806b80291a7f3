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
 */
const shared = path.join(import.meta.dirname, 'shared/src');

export default defineConfig({
  resolve: {
    alias: [{ find: /^@pcg\/shared\/([\w-]+)$/, replacement: `${shared}/$1/index.ts` }],
  },
  test: {
    ...base.test,
    include: [
      'shared/src/{query,validation,grants,reads,audit}/**/*.test.ts',
      'shared/src/finance/transaction-matching.test.ts',
      'services/gateway/test/**/*.test.ts',
    ],
    reporters: ['default'],
  },
});
