import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitFor } from '@pcg/testkit/testing';
import { freePort } from '../../scripts/local-services/index.ts';
import { guardedChildEnv } from '../support/no-internet-guard.ts';
import { launchStack, type LaunchedStack } from './launched-stack.ts';

// Issue 42 "The demo in one command", done when: `npm start` and `npm run demo` with no `.env` and no
// provider setting (a temp DATA_DIR, free ports), and an agent reads connections from all nine providers
// in every sector (finance 2, health 2, mail 3, contacts 3, calendar 3, home 1); a second run makes no second
// connection; `--remove` leaves no demo connection.
const root = path.resolve(import.meta.dirname, '../..');
const name = 'demo1';
let stack: LaunchedStack;
let demoDataDir: string;
let demoEnv: Record<string, string>;

beforeAll(async () => {
  stack = await launchStack(name);
  demoDataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-demo1-'));
  demoEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    ...guardedChildEnv(),
    BIND_HOST: '127.0.0.1',
    REST_PORT: new URL(stack.consoleUrl).port,
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: `pcg-${name}-${process.pid}:`,
    DATA_DIR: demoDataDir,
    DEMO_HUB_PORT: String(await freePort()),
    DEMO_GRAPH_PORT: String(await freePort()),
    DEMO_GOOGLE_PORT: String(await freePort()),
    DEMO_WEARABLE_PORT: String(await freePort()),
    DEMO_AGGREGATOR_PORT: String(await freePort()),
    DEMO_RADICALE_PORT: String(await freePort()),
    DEMO_DOVECOT_PORT: String(await freePort()),
  };
}, 90_000);
afterAll(async () => {
  expect(await stack?.stop()).toBe(0);
  await rm(demoDataDir, { recursive: true, force: true });
});

/** Runs the demo; once its sources keep running, `whileRunning` runs, then Ctrl-C. `--remove` runs to its end. */
async function runDemo(args: string[], whileRunning: () => Promise<void> = async () => undefined): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [path.join(root, 'scripts/demo.ts'), ...args], { cwd: root, env: demoEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let started = false;
  let failure: unknown;
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (!started && output.includes('Ctrl-C stops them')) {
      started = true;
      void whileRunning()
        .catch((error: unknown) => (failure = error))
        .finally(() => child.kill('SIGINT'));
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (failure) throw failure;
  return { code, output };
}

type ConnectionRow = { id: string; provider: string; sector: string; lastSyncedAt: string | null; lastError: string | null };
const consoleConnections = async () => ((await (await fetch(`${stack.consoleUrl}/api/connections`)).json()) as { connections: ConnectionRow[] }).connections;

async function agentKey(): Promise<string> {
  const response = await fetch(`${stack.consoleUrl}/api/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'demo-reader', sectors: ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'] }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { key: string }).key;
}

describe('npm start and npm run demo, with no .env', { tags: ['needs-radicale', 'needs-dovecot'] }, () => {
  it('an agent reads connections from all nine providers in every sector; a second run makes no second connection; --remove leaves none', async () => {
    let seen: Array<{ provider: string; sector: string }> = [];
    const first = await runDemo([], async () => {
      await waitFor(async () => {
        const rows = (await consoleConnections()).filter((row) => row.provider !== 'health-auto-export');
        return rows.length >= 13 && rows.every((row) => row.lastSyncedAt !== null && row.lastError === null) ? true : undefined;
      }, 60_000, 'every demo connection synced');
      const client = new Client({ name: 'demo-reader', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${await agentKey()}` } } }));
      try {
        const answer = await client.callTool({ name: 'describe_context', arguments: {} });
        const text = (answer.content as Array<{ type: string; text: string }>)[0]?.text ?? '{}';
        seen = (JSON.parse(text) as { connections: Array<{ provider: string; sector: string }> }).connections;
      } finally {
        await client.close();
      }
    });
    expect(first.code, first.output).toBe(0);
    const sources = (sector: string) => [...new Set(seen.filter((row) => row.sector === sector).map((row) => row.provider))].sort();
    expect(sources('finance'), JSON.stringify(seen)).toEqual(['plaid', 'simplefin']);
    expect(sources('health')).toEqual(['health-auto-export', 'whoop']);
    expect(sources('mail')).toEqual(['gmail', 'icloud', 'microsoft']);
    expect(sources('contacts')).toEqual(['google', 'icloud', 'microsoft']);
    expect(sources('calendar')).toEqual(['google', 'icloud', 'microsoft']);
    expect(sources('home')).toEqual(['home-assistant']);
    const made = await consoleConnections();

    const second = await runDemo([]);
    expect(second.code, second.output).toBe(0);
    const key = (rows: ConnectionRow[]) => rows.map((row) => `${row.provider}/${row.sector}`).sort();
    expect(key(await consoleConnections())).toEqual(key(made));

    const removed = await runDemo(['--remove']);
    expect(removed.code, removed.output).toBe(0);
    expect(await consoleConnections()).toEqual([]);
  }, 300_000);
});
