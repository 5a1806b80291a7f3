/**
 * Checks the requirements map against the tests vitest actually ran: every `path › full name` a row gives
 * must be exactly one test of that file, by its full name as vitest prints it (suites and title joined by
 * " > "), and no test of the suite may be a todo or be skipped except by an environment gate it declares.
 */
import type { MapEntry } from './requirements-map.ts';

/** One test as the run ended: `mode` is how it was declared, `state` how it ended. */
export type RanTest = {
  file: string;
  name: string;
  mode: 'run' | 'only' | 'skip' | 'todo';
  state: 'passed' | 'failed' | 'skipped' | 'pending';
  tags: readonly string[];
};

/** A vitest tag that skips its tests where the machine lacks something (a server, a tool, a file). */
export type EnvironmentGate = { tag: string; open: boolean; reason: string };

export type MapCheck = {
  problems: string[];
  /** Tests skipped by a closed environment gate, with the gate's reason: reported, not failed. */
  gated: string[];
};

const key = (file: string, name: string) => `${file}\u0000${name}`;

/**
 * `suiteFiles` are the test files of the suite that ran (`npm test` or `npm run test:faults`): a row's test in
 * a file of the other suite is checked when that suite runs.
 */
export function checkRequirementsMap(
  entries: readonly MapEntry[],
  tests: readonly RanTest[],
  gates: readonly EnvironmentGate[],
  suiteFiles: ReadonlySet<string>,
): MapCheck {
  const problems: string[] = [];
  const gated: string[] = [];
  const byName = new Map<string, RanTest[]>();
  for (const test of tests) byName.set(key(test.file, test.name), [...(byName.get(key(test.file, test.name)) ?? []), test]);
  const closedGates = new Map(gates.filter((gate) => !gate.open).map((gate) => [gate.tag, gate]));

  for (const test of tests) {
    const label = `${test.file} › ${test.name}`;
    if (test.mode === 'todo') problems.push(`${label}: is a todo`);
    else if (test.mode === 'only') problems.push(`${label}: is marked only, so the rest of its file did not run`);
    else if (test.state === 'skipped') {
      const gate = test.tags.map((tag) => closedGates.get(tag)).find((found) => found !== undefined);
      if (gate) gated.push(`${label} (${gate.tag}: ${gate.reason})`);
      else problems.push(`${label}: was skipped, and no closed environment gate it declares explains why`);
    }
  }

  for (const entry of entries) {
    for (const proof of entry.proofs) {
      if (proof.kind !== 'test' || !suiteFiles.has(proof.file)) continue;
      const found = byName.get(key(proof.file, proof.title)) ?? [];
      if (found.length === 1) continue;
      if (found.length > 1) {
        problems.push(`${entry.id}: "${proof.file} › ${proof.title}" names ${found.length} tests`);
        continue;
      }
      const containing = tests.filter((test) => test.file === proof.file && test.name.includes(proof.title));
      const hint = containing.length > 0 ? `; it is only a part of ${containing.map((test) => `"${test.name}"`).join(', ')}` : '';
      problems.push(`${entry.id}: ${proof.file} ran no test named "${proof.title}"${hint}`);
    }
  }
  return { problems, gated };
}
