import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The test kit is development only: the image copies its manifest and none of its sources, so a runtime
// source that imported it would fail in production while every test passed. The README names the
// development entry points that may import it (the demo, bench:mcp and bench:tool-path); runtime sources may not.

const root = path.resolve(import.meta.dirname, '../..');
const SERVICES = ['gateway', 'console', 'sync-worker', 'audit-writer'];
/** What runs in the image: each service's sources, the Console page, and shared's sources but its tests. */
const RUNTIME_FOLDERS = [...SERVICES.map((name) => `services/${name}/src`), 'services/console/web', 'shared/src'];
const TESTKIT = path.join(root, 'testkit');

function runtimeSources(folder: string): string[] {
  return readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    .map((file) => path.join(folder, file));
}

/** Whether an import specifier of `file` names the test kit: its package, or a path into its folder. */
function intoTestkit(file: string, specifier: string): boolean {
  if (specifier === '@pcg/testkit' || specifier.startsWith('@pcg/testkit/')) return true;
  if (!specifier.startsWith('.')) return false;
  const target = path.resolve(root, path.dirname(file), specifier);
  return target === TESTKIT || target.startsWith(`${TESTKIT}${path.sep}`);
}

describe('runtime sources never import the test kit', () => {
  it('finds no import of the test kit in the four services (the Console page included) or in shared/src', () => {
    const files = RUNTIME_FOLDERS.flatMap(runtimeSources);
    expect(files.length).toBeGreaterThan(200);
    const found: string[] = [];
    for (const file of files) {
      // Static imports, re-exports, import() and require() alike.
      const { importedFiles } = ts.preProcessFile(readFileSync(path.join(root, file), 'utf8'), true, true);
      for (const { fileName } of importedFiles) if (intoTestkit(file, fileName)) found.push(`${file}: ${fileName}`);
    }
    expect(found).toEqual([]);
  });

  it('has no service or shared depend on the test kit package', () => {
    for (const folder of [...SERVICES.map((name) => `services/${name}`), 'shared']) {
      const manifest = JSON.parse(readFileSync(path.join(root, folder, 'package.json'), 'utf8')) as Record<string, unknown>;
      for (const kind of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
        expect(Object.keys((manifest[kind] ?? {}) as Record<string, string>), `${folder} ${kind}`).not.toContain('@pcg/testkit');
      }
    }
  });
});
