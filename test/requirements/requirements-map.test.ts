import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
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
  it('is made from the specification the project follows (the copy in docs/spec matches the shared one)', () => {
    const shared = path.resolve(root, '../shared/spec/gateway-interface.md');
    if (!existsSync(shared)) return;
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

  it('names for every rule a test that exists, or a reasoned exception', () => {
    const problems: string[] = [];
    for (const entry of entries) {
      if (entry.proofs.length === 0) problems.push(`${entry.id}: no test and no reason`);
      for (const proof of entry.proofs) {
        if (proof.kind === 'exception') {
          if (!EXCEPTION.test(proof.text)) problems.push(`${entry.id}: "${proof.text}" is neither "path › test title" nor "not testable here: why" / "not built yet: issue N — why"`);
          continue;
        }
        const file = path.join(root, proof.file);
        if (!existsSync(file)) problems.push(`${entry.id}: ${proof.file} does not exist`);
        else if (!readFileSync(file, 'utf8').includes(proof.title)) problems.push(`${entry.id}: ${proof.file} has no test titled "${proof.title}"`);
      }
    }
    expect(problems).toEqual([]);
  });
});
