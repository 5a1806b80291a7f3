import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The query engine's modules form a tree of imports, never a loop (issue 43): two modules that import each
// other (or a longer ring) can only be loaded in one order, and each half reads the other before it is whole.

const QUERY = import.meta.dirname;

/** The modules of this folder each module imports (static imports, type imports, re-exports, import()). */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [name, text] of sources) {
    const { importedFiles } = ts.preProcessFile(text, true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => path.posix.normalize(path.posix.join(path.posix.dirname(name), specifier)))
      .filter((target) => sources.has(target));
    graph.set(name, [...new Set(targets)]);
  }
  return graph;
}

/** Every ring of imports, each as `a.ts -> b.ts -> a.ts`, starting from its first module in name order. */
function importRings(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const rings = new Set<string>();
  const walk = (trail: string[]) => {
    for (const next of graph.get(trail.at(-1) as string) ?? []) {
      const start = trail.indexOf(next);
      if (start >= 0) {
        const ring = trail.slice(start);
        const first = ring.indexOf([...ring].sort()[0] as string);
        const turned = [...ring.slice(first), ...ring.slice(0, first)];
        rings.add([...turned, turned[0]].join(' -> '));
      } else {
        walk([...trail, next]);
      }
    }
  };
  for (const name of graph.keys()) walk([name]);
  return [...rings].sort();
}

function runtimeSources(): Map<string, string> {
  const files = readdirSync(QUERY, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'));
  return new Map(files.map((file) => [file.split(path.sep).join('/'), readFileSync(path.join(QUERY, file), 'utf8')]));
}

describe('the modules of shared/src/query', () => {
  it('never import each other, directly or around a ring', () => {
    const sources = runtimeSources();
    expect(sources.size).toBeGreaterThan(15);
    const graph = importGraph(sources);
    expect(graph.get('query-plan.ts')).toContain('query-aggregate-plan.ts');
    expect(importRings(graph)).toEqual([]);
  });

  it('finds two modules that import each other, by a type import or a re-export too, and a longer ring', () => {
    const sources = new Map([
      ['plan.ts', "import { planAggregate } from './aggregate.ts';\nexport type { Group } from './group.ts';\n"],
      ['aggregate.ts', "import type { Order } from './plan.ts';\nimport { z } from 'zod';\n"],
      ['group.ts', "export * from './order.ts';\n"],
      ['order.ts', "const later = () => import('./group.ts');\n"],
      ['leaf.ts', "import { sql } from 'slonik';\nimport { Unknown } from './elsewhere.ts';\n"],
      ['ring-a.ts', "import './ring-b.ts';\n"],
      ['ring-b.ts', "import './ring-c.ts';\n"],
      ['ring-c.ts', "import './ring-a.ts';\n"],
    ]);
    expect(importRings(importGraph(sources))).toEqual([
      'aggregate.ts -> plan.ts -> aggregate.ts',
      'group.ts -> order.ts -> group.ts',
      'ring-a.ts -> ring-b.ts -> ring-c.ts -> ring-a.ts',
    ]);
  });
});
