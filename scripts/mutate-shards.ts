/**
 * The shards of mutation testing (issue 43): one per core module, run by `npm run mutate` (scripts/mutate.ts),
 * each with its own incremental file and sandbox, so two can run at once.
 *
 * A shard's tests reach its mutated code only by relative imports: Stryker copies the tree to a sandbox, but a
 * workspace import (`@pcg/shared/…`) goes through node_modules' symlinks to the original tree, whose code is
 * never mutated. So a shard's test files are those beside its modules (or, for the gateway, under its test/).
 */
export type Shard = {
  /** The module's source files (globs). */
  mutate: string[];
  /** The tests that exercise them by relative import (globs). */
  testFiles: string[];
  /**
   * Whether a test file's database is reused from mutant to mutant and put back into the template's state
   * (scripts/mutate-test-environment.ts) instead of cloned and dropped each time. Proven for the query tests.
   */
  reuseDatabases?: boolean;
  /**
   * Whether each test file gets a fresh module graph (vitest's `isolate`), as in `npm test`. A shard whose
   * modules build something once per catalogue object (`builtOncePer`) needs it: in one shared graph the
   * dry run credits only the first test that built it with reaching its mutants, which then run too few tests
   * and survive falsely.
   */
  isolated?: boolean;
};

const QUERY_TESTS = ['shared/src/query/*.test.ts'];

export const shards: Record<string, Shard> = {
  // The query planner: input parsing, the plan and the aggregate plan, the cursor.
  'query-plan': {
    mutate: ['shared/src/query/query-{plan,aggregate-plan,input,cursor}*.ts'],
    testFiles: QUERY_TESTS,
    reuseDatabases: true,
  },
  // The SQL builder: the page and aggregate statements, computed columns, visibility, twin rows.
  'query-sql': {
    mutate: ['shared/src/query/query-{sql,computed,visible,twins}*.ts'],
    // Twin rows (a transfer seen from both accounts) are exercised by the finance matching tests.
    testFiles: [...QUERY_TESTS, 'shared/src/finance/transaction-matching.test.ts'],
    reuseDatabases: true,
    // query-sql.ts and query-visible.ts keep their statements' parts per catalogue object (builtOncePer).
    isolated: true,
  },
  // Date validation and relative dates.
  dates: {
    mutate: ['shared/src/query/query-dates.ts'],
    testFiles: QUERY_TESTS,
    reuseDatabases: true,
  },
  // Value validation: what Postgres would refuse, and the filter values of a query.
  values: {
    mutate: ['shared/src/validation/pg-values.ts', 'shared/src/query/query-values.ts'],
    testFiles: ['shared/src/validation/*.test.ts', ...QUERY_TESTS],
    reuseDatabases: true,
  },
  // Grants and agent key checks.
  grants: {
    mutate: ['shared/src/grants/{grants-fns,agent-key-fns,key-resolver}.ts'],
    testFiles: ['shared/src/grants/*.test.ts'],
  },
  // The call guard in front of every read and action.
  'call-guard': {
    mutate: ['shared/src/reads/call-guard.ts'],
    // Its own unit tests: the read and action services' tests pass through it too, but each of their files
    // fills a database first, which every mutant would repeat.
    testFiles: ['shared/src/reads/call-guard.test.ts'],
  },
  // The MCP request validation at the gateway's edge, by its unit tests: the mcp-* tests over HTTP each start
  // a gateway first, which every mutant of the module would repeat (two hours on a busy 2-core machine).
  'request-validation': {
    mutate: ['services/gateway/src/mcp/request-validation.ts'],
    testFiles: ['services/gateway/test/mcp-request-validation.test.ts'],
  },
  // The audit chain, in three shards of its own (each mutant's tests write and walk a chain in Postgres, so one
  // shard would be the longest by far): the canonical form, the links and the writer's HMAC, by their unit tests alone;
  // the verify and the walk it reads with; the writing of links (INSERT and COPY), the descent check and the
  // verification service.
  'audit-chain-fns': {
    mutate: ['shared/src/audit/audit-chain-{fns,hmac}.ts'],
    testFiles: ['shared/src/audit/audit-chain-{fns,hmac}.test.ts'],
  },
  'audit-chain-verify': {
    mutate: ['shared/src/audit/audit-chain-{verify,walk}.ts'],
    testFiles: ['shared/src/audit/audit-chain*.test.ts'],
  },
  'audit-chain-write': {
    mutate: ['shared/src/audit/audit-chain-{queries,copy,descent,service}.ts'],
    testFiles: ['shared/src/audit/audit-chain*.test.ts'],
  },
  // The refusal throttle.
  throttle: {
    mutate: ['shared/src/audit/audit-throttle.ts'],
    testFiles: ['shared/src/audit/audit-throttle.test.ts'],
  },
};

/** What `npm run mutate:smoke` runs from scratch in CI: a small shard, with only its unit tests (no database). */
export const SMOKE = { shard: 'dates', testFiles: ['shared/src/query/query-dates.test.ts'] };
