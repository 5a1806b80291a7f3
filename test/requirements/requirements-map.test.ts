import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRequirementsMap, type EnvironmentGate, type RanTest } from './map-check.ts';
import { EXCEPTION, parseRequirementsMap } from './requirements-map.ts';
import { specRules } from './spec-rules.ts';

const root = path.resolve(import.meta.dirname, '../..');
const specPath = path.join(root, 'docs/spec/gateway-interface.md');
const spec = readFileSync(specPath, 'utf8');
const rules = specRules(spec);
const entries = parseRequirementsMap(readFileSync(path.join(root, 'docs/requirements.md'), 'utf8'));
const byId = new Map(entries.map((entry) => [entry.id, entry]));

/** Backticks and runs of spaces differ between a table cell and the rule it quotes; the words may not. */
const words = (text: string) => text.replace(/`/g, '').replace(/\\\|/g, '|').replace(/\s+/g, ' ').trim();

describe('the requirements map (docs/requirements.md)', () => {
  it('is made from the specification the project follows (the copy in docs/spec matches the shared one)', { tags: ['needs-shared-spec'] }, () => {
    const shared = path.resolve(root, '../shared/spec/gateway-interface.md');
    expect(readFileSync(shared, 'utf8'), 'docs/spec/gateway-interface.md is older than ../shared/spec: copy it and map the new rules').toBe(spec);
  });

  it('has one row per rule of the specification, and no row for a rule that is not there', () => {
    expect(entries.map((entry) => entry.id).filter((id, index, all) => all.indexOf(id) !== index), 'ids listed twice').toEqual([]);
    expect(rules.filter((rule) => !byId.has(rule.id)).map((rule) => `${rule.id} ${rule.text.slice(0, 80)}`), 'rules with no row').toEqual([]);
    const ids = new Set(rules.map((rule) => rule.id));
    expect(entries.filter((entry) => !ids.has(entry.id)).map((entry) => entry.id), 'rows naming no rule').toEqual([]);
  });

  it('quotes the start of each rule, so a renumbered or reworded rule is noticed', () => {
    const stale = rules.filter((rule) => {
      const entry = byId.get(rule.id);
      return entry !== undefined && (entry.excerpt.length < 12 || !words(rule.text).startsWith(words(entry.excerpt)));
    });
    expect(stale.map((rule) => `${rule.id}: "${byId.get(rule.id)?.excerpt}" is not the start of "${rule.text.slice(0, 80)}"`)).toEqual([]);
  });

  it('names for every rule a test in a test file of npm test or npm run test:faults, or a reasoned exception', () => {
    const problems: string[] = [];
    for (const entry of entries) {
      if (entry.proofs.length === 0) problems.push(`${entry.id}: no test and no reason`);
      for (const proof of entry.proofs) {
        if (proof.kind === 'exception') {
          if (!EXCEPTION.test(proof.text)) problems.push(`${entry.id}: "${proof.text}" is neither "path › full test name" nor "not testable here: why" / "not built yet: issue N — why" / "departure: issue N — what"`);
          continue;
        }
        if (!proof.file.endsWith('.test.ts') || !existsSync(path.join(root, proof.file))) problems.push(`${entry.id}: ${proof.file} is no test file`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('the requirements map check after a whole run (requirements-map-reporter.ts)', () => {
  const file = 'services/gateway/test/not-found.test.ts';
  const ran = (name: string, more: Partial<RanTest> = {}): RanTest => ({ file, name, mode: 'run', state: 'passed', tags: [], ...more });
  const row = (...titles: string[]) => parseRequirementsMap(`| 7.r6 | any path but \`/mcp\` | ${titles.map((title) => `${file} › ${title}`).join('<br>')} |`);
  const gates: EnvironmentGate[] = [
    { tag: 'needs-dovecot', open: false, reason: 'Dovecot is not installed' },
    { tag: 'needs-radicale', open: true, reason: 'Radicale is not installed' },
  ];
  const check = (map: ReturnType<typeof row>, tests: RanTest[]) => checkRequirementsMap(map, tests, gates, new Set([file]));
  const fullName = 'gateway agent port, bridge off > answers GET /x with 404 -32601 "Not found" (spec 7)';

  it('accepts a row naming exactly one test that ran, by its full name', () => {
    expect(check(row(fullName), [ran(fullName)])).toEqual({ problems: [], gated: [] });
  });

  it('refuses a fragment of a test name, and names the test it is part of', () => {
    const { problems } = check(row('answers GET /x with 404 -32601'), [ran(fullName)]);
    expect(problems).toEqual([`7.r6: ${file} ran no test named "answers GET /x with 404 -32601"; it is only a part of "${fullName}"`]);
  });

  it('refuses the title alone, without the suites it stands in', () => {
    expect(check(row('answers GET /x with 404 -32601 "Not found" (spec 7)'), [ran(fullName)]).problems).toHaveLength(1);
  });

  it('refuses a name that no test has', () => {
    expect(check(row('answers nothing'), [ran(fullName)]).problems).toEqual([`7.r6: ${file} ran no test named "answers nothing"`]);
  });

  it('refuses a name that two tests share', () => {
    expect(check(row(fullName), [ran(fullName), ran(fullName)]).problems).toEqual([`7.r6: "${file} › ${fullName}" names 2 tests`]);
  });

  it('refuses a test skipped with it.skip, skipIf or ctx.skip, named in the map or not', () => {
    const skipped = [ran(fullName, { mode: 'skip', state: 'skipped' }), ran('another > skipped at run time', { state: 'skipped' })];
    expect(check(row(fullName), skipped).problems).toEqual([
      `${file} › ${fullName}: was skipped, and no closed environment gate it declares explains why`,
      `${file} › another > skipped at run time: was skipped, and no closed environment gate it declares explains why`,
    ]);
  });

  it('refuses a skip under an environment gate that is open here', () => {
    expect(check(row(fullName), [ran(fullName, { mode: 'skip', state: 'skipped', tags: ['needs-radicale'] })]).problems).toHaveLength(1);
  });

  it('accepts a skip by a closed environment gate, and reports it with the reason', () => {
    expect(check(row(fullName), [ran(fullName, { mode: 'skip', state: 'skipped', tags: ['needs-dovecot'] })])).toEqual({
      problems: [],
      gated: [`${file} › ${fullName} (needs-dovecot: Dovecot is not installed)`],
    });
  });

  it('refuses a todo and an only', () => {
    const { problems } = check(row(fullName), [ran(fullName), ran('later', { mode: 'todo', state: 'skipped' }), ran('alone', { mode: 'only' })]);
    expect(problems).toEqual([`${file} › later: is a todo`, `${file} › alone: is marked only, so the rest of its file did not run`]);
  });

  it("leaves a name in the other suite's files to that suite's run", () => {
    const faults = parseRequirementsMap('| 8.p1 | No rate limit | test/faults/stack-faults.fault.test.ts › faults > a Redis restart |');
    expect(check(faults, [ran(fullName)]).problems).toEqual([]);
  });

  it('reads names that hold a semicolon or an escaped bar, one test a line', () => {
    const [entry] = parseRequirementsMap(`| 1.i1 | The gateway | ${file} › a > b; c<br>${file} › x \\| y<br>not testable here: why |`);
    expect(entry?.proofs).toEqual([
      { kind: 'test', file, title: 'a > b; c' },
      { kind: 'test', file, title: 'x | y' },
      { kind: 'exception', text: 'not testable here: why' },
    ]);
  });
});
