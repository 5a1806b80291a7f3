import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Cuts the prose out of one of Google's discovery documents: every string `description`, every
 * `enumDescriptions` / `enumDeprecated` list and the `icons`. Every method, parameter and schema stays as
 * upstream wrote it (a schema property that is itself named `description` is an object, so it stays).
 * Run: `node testkit/src/doubles/google/discovery/trim-discovery.ts <upstream gmail.v1.json> <out>`.
 */
export function trimDiscovery(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(trimDiscovery);
  if (!node || typeof node !== 'object') return node;
  const prose = ([key, value]: [string, unknown]) =>
    (key === 'description' && typeof value === 'string') || ((key === 'enumDescriptions' || key === 'enumDeprecated') && Array.isArray(value)) || key === 'icons';
  return Object.fromEntries(
    Object.entries(node)
      .filter((entry) => !prose(entry))
      .map(([key, value]) => [key, trimDiscovery(value)]),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [from, to] = process.argv.slice(2);
  if (!from || !to) throw new Error('usage: trim-discovery.ts <upstream.json> <out.json>');
  writeFileSync(to, `${JSON.stringify(trimDiscovery(JSON.parse(readFileSync(from, 'utf8'))), null, 1)}\n`);
}
