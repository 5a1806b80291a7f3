import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as sharedConfig from '@pcg/shared/config';
import { auditWriterConfigSchema } from '../../services/audit-writer/src/config.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { gatewayConfigSchema } from '../../services/gateway/src/config.ts';
import { operatorStdioConfigSchema } from '../../services/gateway/src/stdio/operator-session.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';

// The README says deploy/.env.example lists every variable: each setting a service, the launcher, `pcg` or
// compose reads has one line there and one row in the README's configuration table, and nothing else does.

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** The services' schemas (and `pcg mcp`'s), and every fragment the shared configuration exports. */
const SCHEMAS: Record<string, z.ZodObject> = {
  gateway: gatewayConfigSchema,
  console: consoleConfigSchema,
  'sync-worker': syncWorkerConfigSchema,
  'audit-writer': auditWriterConfigSchema,
  'pcg mcp': operatorStdioConfigSchema,
  ...Object.fromEntries(Object.entries(sharedConfig as Record<string, unknown>).filter((entry): entry is [string, z.ZodObject] => entry[1] instanceof z.ZodObject)),
};

/** What the launcher, its store finders and `pcg` read from the environment beside the schemas (`env.NAME`). */
const LAUNCHER_SOURCES = ['scripts/launcher.ts', 'scripts/pcg.ts', 'scripts/launcher', 'scripts/local-services', 'scripts/cli'];

function sourceFiles(entry: string): string[] {
  if (entry.endsWith('.ts')) return [entry];
  return readdirSync(path.join(root, entry), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    .map((file) => path.join(entry, file));
}

function launcherReads(): string[] {
  const names = new Set<string>();
  for (const file of LAUNCHER_SOURCES.flatMap(sourceFiles)) {
    for (const match of read(file).matchAll(/\benv(?:\?\.|\.)([A-Z][A-Z0-9_]*)\b|\benv\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\]/g)) names.add(match[1] ?? match[2] ?? '');
  }
  return [...names];
}

/** Variables compose itself substitutes into deploy/compose.yaml (`${NAME…}`). */
function composeReads(): string[] {
  return [...read('deploy/compose.yaml').matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)].map((match) => match[1] ?? '');
}

/** Each `NAME=value` line of .env.example, commented out or not, with its value. */
function exampleLines(): Array<{ name: string; value: string }> {
  return read('deploy/.env.example')
    .split('\n')
    .flatMap((line) => {
      const match = /^(?:# ?)?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
      return match ? [{ name: match[1] ?? '', value: match[2] ?? '' }] : [];
    });
}

/** The names in the first cell of each row of the README's "## Configuration" table. */
function readmeTableNames(): string[] {
  const readme = read('README.md');
  const start = readme.indexOf('\n## Configuration\n');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1] ?? ''));
}

const sorted = (names: Iterable<string>) => [...new Set(names)].sort();
const schemaNames = sorted(Object.values(SCHEMAS).flatMap((schema) => Object.keys(schema.shape)));
const expected = sorted([...schemaNames, ...launcherReads(), ...composeReads()]);

describe('deploy/.env.example and the README list every configuration variable', () => {
  it('finds the variables the code reads: the services\' schemas, the launcher\'s store finders and pcg', () => {
    // The readers themselves, so an empty or broken scan cannot make the comparisons below pass.
    expect(schemaNames).toEqual(expect.arrayContaining(['REST_PORT', 'MCP_HTTP_PORT', 'SYNC_LOCK_MS', 'AUDIT_ANCHOR_MS', 'LIVE_TIMEOUT_MS', 'CREDENTIALS_KEY']));
    expect(launcherReads()).toEqual(expect.arrayContaining(['LOCAL_DATABASE_URL', 'LOCAL_REDIS_URL', 'EMBEDDED_POSTGRES_PORT', 'CHILD_REDIS_PORT', 'PCG_CONSOLE_URL']));
    expect(composeReads()).toContain('POSTGRES_PASSWORD');
  });

  it('has one line in deploy/.env.example for each variable read, and none for a variable nothing reads', () => {
    const names = exampleLines().map((line) => line.name);
    expect(names.filter((name, i) => names.indexOf(name) !== i), 'listed twice').toEqual([]);
    expect(sorted(names)).toEqual(expected);
  });

  it('has one row in the README\'s configuration table for each variable read, and none for a variable nothing reads', () => {
    expect(sorted(readmeTableNames())).toEqual(expected);
  });

  it('shows each schema setting at its default, where it shows a value', () => {
    const wrong: string[] = [];
    for (const { name, value } of exampleLines()) {
      if (value === '') continue; // empty means unset, as loadConfig reads it
      for (const [owner, schema] of Object.entries(SCHEMAS)) {
        const field = schema.shape[name] as z.ZodType | undefined;
        if (!field) continue;
        const shown = field.safeParse(value);
        const unset = field.safeParse(undefined);
        if (!shown.success || !unset.success || !isDeepStrictEqual(shown.data, unset.data)) wrong.push(`${name}=${value} (${owner}: default ${JSON.stringify(unset.data)})`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
