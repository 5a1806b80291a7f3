import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { createCapturingLogger } from '@pcg/testkit/testing';

// Issue 38: the gateway's idle memory is mostly the code it loads. What it needs only on a rare path
// (the live queue) or never (fastify's JSON schema compilers) is not loaded when it starts.
const root = fileURLToPath(new URL('../src/', import.meta.url));
let loaded: string[] = [];

beforeAll(async () => {
  // Every module the gateway's entry points load, as resolved URLs, in a fresh process.
  const probe = [
    "import { registerHooks } from 'node:module';",
    'const loaded = [];',
    'registerHooks({ resolve(specifier, context, next) { const result = next(specifier, context); loaded.push(result.url); return result; } });',
    `const { buildApp } = await import(${JSON.stringify(root)} + 'app.ts');`,
    "await buildApp({ log: (await import('pino')).pino({ level: 'silent' }) }).ready();",
    `for (const file of ['service.ts', 'config.ts', 'stdio/operator-session.ts']) await import(${JSON.stringify(root)} + file);`,
    'console.log(JSON.stringify(loaded));',
  ].join('\n');
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', probe], { timeout: 60_000, cwd: root });
  loaded = JSON.parse(stdout) as string[];
  expect(loaded.some((url) => url.includes('/services/gateway/src/service.ts'))).toBe(true);
}, 60_000);

describe("the gateway's code at start (issue 38)", () => {
  it('does not load BullMQ: the service, its config and the operator session import no queue code until a live request', () => {
    expect(loaded.filter((url) => url.includes('/node_modules/bullmq/'))).toEqual([]);
  });

  it("does not load fastify's JSON schema compilers (Ajv, fast-json-stringify) for an agent port that declares no schema", () => {
    // fastify's core takes two small files of fast-json-stringify's (its error serializer's runtime); not the compiler.
    const compilers = /\/node_modules\/(@fastify\/ajv-compiler\/|@fastify\/fast-json-stringify-compiler\/|fast-json-stringify\/index\.js|fast-json-stringify\/node_modules\/ajv\/)/;
    expect(loaded.filter((url) => compilers.test(url))).toEqual([]);
  });

  it("runs on the SDK's current line: loads its v2 server package and nothing of the v1 package or its HTTP adapter", () => {
    expect(loaded.some((url) => url.includes('/node_modules/@modelcontextprotocol/server/'))).toBe(true);
    expect(loaded.filter((url) => /\/node_modules\/(@modelcontextprotocol\/sdk|@hono\/node-server)\//.test(url))).toEqual([]);
  });

  it('refuses, at registration, a route that declares a JSON schema, instead of serving it unchecked', async () => {
    const app = buildApp({ log: createCapturingLogger('gateway').log });
    app.post('/with-schema', { schema: { body: { type: 'object', properties: { a: { type: 'string' } } } } }, async () => ({}));
    await expect(app.ready()).rejects.toThrow(/no JSON schema validator/);
    await app.close();
  });
});
