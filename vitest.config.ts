import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['shared/src/**/*.test.ts', 'testkit/src/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Fault tests kill processes and stop stores under load: they run alone, in `npm run test:faults`.
    exclude: ['**/node_modules/**', '**/*.fault.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
