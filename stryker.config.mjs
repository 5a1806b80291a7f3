// @ts-check
import { shards } from './scripts/mutate-shards.ts';

/**
 * Mutation testing of the core (issue 43): StrykerJS with its vitest runner. scripts/mutate.ts runs it by
 * shards (scripts/mutate-shards.ts), two at a time, overriding `mutate`, `testFiles`, the incremental file, the
 * sandbox and the report names; this file holds what every shard shares. `npx stryker run` alone mutates the
 * whole core in one go.
 */

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  // Each test is traced to the mutants it reaches, and a mutant runs only the tests that reach it.
  coverageAnalysis: 'perTest',
  // Results are kept per shard (reports/mutation/<shard>.incremental.json, committed): a later run tests
  // only the mutants whose code or covering tests changed. `npm run mutate -- --force` tests all again.
  incremental: true,
  // The machine has two cores and others work on it; two shards may run at once, one runner each.
  concurrency: 1,
  // Integration tests talk to Postgres; a busy machine must not turn a slow query into a timeout.
  timeoutMS: 20_000,
  // Static mutants (a module-level constant: a regex, a zod schema, a message) are reported as ignored, for two
  // reasons. Each needs a fresh module graph and every test of its shard (minutes for the Postgres-backed query
  // tests, hundreds of them in query-input's schemas), which alone would exceed the hour. And with `testFiles`
  // Stryker 10.1 runs them with runtime activation, after the module has loaded, so they would survive
  // falsely. scripts/mutate.ts prints how many each module has.
  ignoreStatic: true,
  mutate: Object.values(shards).flatMap((shard) => shard.mutate).concat('!**/*.test.ts'),
  // Another shard's sandbox (.stryker-tmp/<shard>) is never copied into this one's.
  ignorePatterns: ['.stryker-tmp', 'data', 'docs', 'deploy', 'reports', 'coverage', 'test-results'],
  reporters: ['progress-append-only', 'clear-text', 'html', 'json'],
  clearTextReporter: { allowColor: false, logTests: false, allowEmojis: false },
  htmlReporter: { fileName: 'reports/mutation/all.html' },
  jsonReporter: { fileName: 'reports/mutation/all.json' },
  incrementalFile: 'reports/mutation/all.incremental.json',
  tempDirName: '.stryker-tmp/all',
  cleanTempDir: 'always',
};
