import { defineConfig } from 'vitest/config';
import { gateTags } from './test/support/gate-tags.ts';

export default defineConfig({
  test: {
    include: ['shared/src/**/*.test.ts', 'testkit/src/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Fault tests kill processes and stop stores under load: they run alone, in `npm run test:faults`.
    exclude: ['**/node_modules/**', '**/*.fault.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Every test process reaches only loopback and unix sockets; what else a test tries fails (conventions, Tests).
    setupFiles: ['test/support/no-internet.ts'],
    // A test may be skipped only by one of these tags, where the machine lacks what it needs.
    tags: gateTags(),
    // After a whole run, the requirements map is checked against the tests that ran (docs/requirements.md).
    reporters: ['default', './test/requirements/requirements-map-reporter.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
