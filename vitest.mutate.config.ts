import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * The vitest configuration Stryker runs (stryker.config.mjs): the suite's own, narrowed to the tests of the
 * core modules, and without the requirements-map reporter, which judges only a whole `npm test` and fails any
 * partial run. The global setup (a migrated template database) and the no-internet setup stay: the query and
 * audit tests use Postgres and Redis.
 */
export default defineConfig({
  test: {
    ...base.test,
    include: ['shared/src/{query,validation,grants,reads,audit}/**/*.test.ts', 'services/gateway/test/**/*.test.ts'],
    reporters: ['default'],
  },
});
