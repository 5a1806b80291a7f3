import { readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';

/**
 * Cuts Plaid's published OpenAPI file down to the operations the gateway calls and the double serves,
 * with every component they reference (transitively), so the kept copy stays a faithful excerpt:
 * each kept schema is byte-for-byte the upstream definition, only unreferenced paths and components are
 * left out; the top-level `security` and every security scheme are kept. The excerpt is written as JSON (the
 * same document; JSON reads in milliseconds where this YAML takes most of a second). Run: `node testkit/src/doubles/plaid/openapi/trim-plaid-openapi.ts <upstream 2020-09-14.yml> 2020-09-14.trimmed.json`.
 */
export const KEPT_OPERATIONS = [
  '/link/token/create',
  '/link/token/get',
  '/item/public_token/exchange',
  '/item/get',
  '/item/remove',
  '/institutions/get_by_id',
  '/accounts/get',
  '/accounts/balance/get',
  '/transactions/sync',
  '/investments/holdings/get',
] as const;

type Node = unknown;
type Doc = { openapi: string; info: unknown; servers?: unknown; security?: unknown; paths: Record<string, unknown>; components: Record<string, Record<string, unknown>> };

export function trimPlaidOpenApi(upstream: Doc): Doc {
  const wanted = new Map<string, Set<string>>();
  const pending: Node[] = [];
  const visit = (node: Node) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        const match = /^#\/components\/([^/]+)\/([^/]+)$/.exec(value);
        if (!match?.[1] || !match[2]) throw new Error(`unexpected reference ${value}`);
        const [, section, name] = match;
        const names = wanted.get(section) ?? new Set<string>();
        wanted.set(section, names);
        if (!names.has(name)) {
          names.add(name);
          const target = upstream.components[section]?.[name];
          if (target === undefined) throw new Error(`dangling reference ${value}`);
          pending.push(target);
        }
      } else visit(value);
    }
  };
  const paths: Record<string, unknown> = {};
  for (const path of KEPT_OPERATIONS) {
    const operation = upstream.paths[path];
    if (!operation) throw new Error(`the upstream file has no ${path}`);
    paths[path] = operation;
    visit(operation);
  }
  while (pending.length > 0) visit(pending.pop());
  // The security schemes are named by the top-level `security` requirement, not referenced with $ref: all are kept.
  const components: Doc['components'] = { securitySchemes: upstream.components.securitySchemes ?? {} };
  for (const [section, entries] of Object.entries(upstream.components)) {
    const names = wanted.get(section);
    if (!names || section === 'securitySchemes') continue;
    components[section] = Object.fromEntries(Object.entries(entries).filter(([name]) => names.has(name)));
  }
  return { openapi: upstream.openapi, info: upstream.info, servers: upstream.servers, security: upstream.security, paths, components };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [source, target] = process.argv.slice(2);
  if (!source || !target) throw new Error('usage: trim-plaid-openapi.ts <upstream 2020-09-14.yml> <out.json>');
  const trimmed = trimPlaidOpenApi(parse(readFileSync(source, 'utf8'), { maxAliasCount: -1 }) as Doc);
  writeFileSync(target, `${JSON.stringify(trimmed, null, 1)}\n`);
}
