import { readdirSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';

export type WebAsset = { body: string; contentType: string };

/** The Console page's files: `services/console/web`. */
export const WEB_ROOT = path.resolve(import.meta.dirname, '../../web');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.ts': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Node's own type stripper warns once that it is experimental; that line would reach the operator's
 * terminal at every start. Only that warning is held back, only while the page's files are stripped.
 */
function stripQuietly(source: string): string {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (/stripTypeScriptTypes/.test(text)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

/**
 * Reads the page's files once, at start: TypeScript is served as the JavaScript Node's type stripping
 * makes of it (the same erasable-syntax rule the services run under), so there is no build step. Test
 * files and the folder's tsconfig are not served.
 */
export function loadWebAssets(root = WEB_ROOT): Map<string, WebAsset> {
  const assets = new Map<string, WebAsset>();
  for (const name of readdirSync(root)) {
    const extension = path.extname(name);
    const contentType = TYPES[extension];
    if (!contentType || name.endsWith('.test.ts')) continue;
    const source = readFileSync(path.join(root, name), 'utf8');
    assets.set(name, { body: extension === '.ts' ? stripQuietly(source) : source, contentType });
  }
  return assets;
}
