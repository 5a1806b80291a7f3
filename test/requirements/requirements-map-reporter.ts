/**
 * A vitest reporter that holds the requirements map to the run that just ended: after a run of the whole
 * main suite (every file, no name or tag filter), it checks `docs/requirements.md` against the tests vitest
 * ran (`checkRequirementsMap`), lists the tests an environment gate skipped, and fails the run on any
 * problem. A run of some files only is not checked: most named tests would be missing from it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule, TestRunEndReason, Vitest } from 'vitest/node';
import { checkRequirementsMap, type EnvironmentGate, type RanTest } from './map-check.ts';
import { parseRequirementsMap } from './requirements-map.ts';

export default class RequirementsMapReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  async onTestRunEnd(testModules: readonly TestModule[], _errors: unknown, reason: TestRunEndReason): Promise<void> {
    const vitest = this.vitest;
    if (!vitest || reason === 'interrupted') return;
    const root = vitest.config.root;
    const suiteFiles = new Set((await vitest.globTestSpecifications()).map((spec) => path.relative(root, spec.moduleId)));
    if (!isWholeSuite(vitest, testModules, suiteFiles)) return;
    const entries = parseRequirementsMap(readFileSync(path.join(root, 'docs/requirements.md'), 'utf8'));
    const tests: RanTest[] = testModules.flatMap((module) =>
      [...module.children.allTests()].map((test) => ({
        file: path.relative(root, module.moduleId),
        name: test.fullName,
        mode: test.options.mode,
        state: test.result().state,
        tags: test.tags,
      })),
    );
    const gates: EnvironmentGate[] = (vitest.config.tags ?? [])
      .filter((tag) => tag.skip !== undefined)
      .map((tag) => ({ tag: tag.name, open: tag.skip !== true, reason: tag.description ?? tag.name }));
    const { problems, gated } = checkRequirementsMap(entries, tests, gates, suiteFiles);
    const out = vitest.logger;
    out.log(`\nRequirements map: ${entries.length} rules checked against ${tests.length} tests that ran.`);
    if (gated.length > 0) out.log(`Skipped by an environment gate (${gated.length}):\n  ${gated.join('\n  ')}`);
    if (problems.length === 0) return;
    out.error(`The requirements map does not hold (${problems.length}):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  }
}

function isWholeSuite(vitest: Vitest, testModules: readonly TestModule[], suiteFiles: ReadonlySet<string>): boolean {
  if (vitest.config.testNamePattern !== undefined || (vitest.config.tagsFilter?.length ?? 0) > 0) return false;
  return testModules.length === suiteFiles.size;
}
