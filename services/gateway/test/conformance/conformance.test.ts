import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import type { RunningGateway } from '../../src/service.ts';
import { startTestGateway } from '../gateway-harness.ts';
import { startKeyProxy } from './key-proxy.ts';

const testEnv = useTestEnvironment();
const BASELINE = path.join(import.meta.dirname, 'conformance-baseline.yml');
/** The suite's own CLI, from the pinned devDependency: nothing is downloaded at run time. */
const CLI = path.join(path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');
/** Scenarios that must pass here (the rest of the active suite is in the baseline, with reasons). */
const PASSING = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

let gateway: RunningGateway;
let proxy: Awaited<ReturnType<typeof startKeyProxy>>;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv);
  const key = await createTestAgent(testEnv.db, { name: 'conformance', sectors: ['finance', 'home'] });
  proxy = await startKeyProxy(gateway.address, key);
});
afterAll(async () => {
  await proxy?.close();
  await gateway?.close();
});

function runSuite(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'server', '--url', `${proxy.url}/mcp`, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

describe('the official MCP conformance suite, server scenarios, through a loopback proxy that adds the key', () => {
  it('passes every scenario that applies to a tools-only server; the others fail only as the baseline says', async () => {
    const { code, output } = await runSuite(['--expected-failures', BASELINE]);
    const summary = output.slice(output.indexOf('=== SUMMARY ==='));
    expect(code, summary).toBe(0);
    for (const scenario of PASSING) expect(summary).toMatch(new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`));
  }, 120_000);
});
