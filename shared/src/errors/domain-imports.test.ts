import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Domain errors carry no HTTP status: a kind, mapped to a status at the edge (shared/http's error handler,
// the Console's routes, the gateway's tool calls). A shared folder other than the HTTP edge itself that
// imported shared/http would be back to throwing statuses, or answering HTTP from the domain.

const SHARED_SRC = path.resolve(import.meta.dirname, '..');
const HTTP = path.join(SHARED_SRC, 'http');
/** The folders of shared/src that are an edge, not the domain. */
const EDGES = new Set(['http']);

const domainFolders = () =>
  readdirSync(SHARED_SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !EDGES.has(entry.name))
    .map((entry) => entry.name);

function runtimeSources(folder: string): string[] {
  return readdirSync(path.join(SHARED_SRC, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    .map((file) => path.join(SHARED_SRC, folder, file));
}

/** Whether an import specifier of `file` names shared/http: by its package name or a path into its folder. */
function intoHttp(file: string, specifier: string): boolean {
  if (specifier === '@pcg/shared/http' || specifier.startsWith('@pcg/shared/http/')) return true;
  if (!specifier.startsWith('.')) return false;
  const target = path.resolve(path.dirname(file), specifier);
  return target === HTTP || target.startsWith(`${HTTP}${path.sep}`);
}

describe('the shared domain folders never import the HTTP edge', () => {
  it('finds no import of shared/http in any shared/src folder but http', () => {
    const folders = domainFolders();
    expect(folders.length).toBeGreaterThan(20);
    const found: string[] = [];
    for (const file of folders.flatMap(runtimeSources)) {
      // Static imports, re-exports, import() and require() alike.
      const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
      for (const { fileName } of importedFiles) if (intoHttp(file, fileName)) found.push(`${path.relative(SHARED_SRC, file)}: ${fileName}`);
    }
    expect(found).toEqual([]);
  });

  it('reads an import of shared/http by a relative path or by its package name, and nothing else', () => {
    const file = path.join(SHARED_SRC, 'reads', 'call-guard.ts');
    expect(intoHttp(file, '../http/index.ts')).toBe(true);
    expect(intoHttp(file, '../http/errors.ts')).toBe(true);
    expect(intoHttp(file, '@pcg/shared/http')).toBe(true);
    expect(intoHttp(file, '../errors/index.ts')).toBe(false);
    expect(intoHttp(file, './http-like.ts')).toBe(false);
    expect(intoHttp(file, '../http-client/index.ts')).toBe(false);
  });
});
