import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { freePort } from '../../scripts/local-services/index.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// Issue 42: `npm run demo` run again re-uses what it made (no second connection), Ctrl-C pauses everything it
// made, and `--remove` removes everything it made and nothing else. The gateway here is started with the
// settings the demo's stand-ins once needed (base URLs, SIMPLEFIN_ALLOW_LOOPBACK): its demo sign-ins use their own
// stand-ins whatever the settings say; iCloud connects with the demo's own Radicale and Dovecot.
const testEnv = useTestEnvironment();
const root = path.resolve(import.meta.dirname, '../..');
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let demoEnv: Record<string, string>;

beforeAll(async () => {
  const ports = { hub: await freePort(), graph: await freePort(), google: await freePort(), wearable: await freePort(), aggregator: await freePort(), radicale: await freePort(), dovecot: await freePort() };
  const local = (port: number) => `http://127.0.0.1:${port}`;
  const env = testEnv.env({
    CREDENTIALS_KEY: randomBytes(32).toString('base64'),
    REST_PORT: '0',
    SOURCE_TIMEOUT_MS: '3000',
    SIMPLEFIN_ALLOW_LOOPBACK: 'true',
    MICROSOFT_LOGIN_BASE_URL: local(ports.graph),
    MICROSOFT_GRAPH_BASE_URL: local(ports.graph),
    GOOGLE_BASE_URL: local(ports.google),
    WHOOP_BASE_URL: local(ports.wearable),
    PLAID_BASE_URL: local(ports.aggregator),
  });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  demoEnv = {
    ...testEnv.env(),
    BIND_HOST: '127.0.0.1',
    REST_PORT: new URL(consoleService.address).port,
    PLAID_BASE_URL: local(ports.aggregator),
    ICLOUD_RESOLVE: '',
    DEMO_HUB_PORT: String(ports.hub),
    DEMO_GRAPH_PORT: String(ports.graph),
    DEMO_GOOGLE_PORT: String(ports.google),
    DEMO_WEARABLE_PORT: String(ports.wearable),
    DEMO_AGGREGATOR_PORT: String(ports.aggregator),
    DEMO_RADICALE_PORT: String(ports.radicale),
    DEMO_DOVECOT_PORT: String(ports.dovecot),
  };
}, 60_000);
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
});

/** Runs `npm run demo` (its script) until it says its sources keep running, then presses Ctrl-C; or `--remove` to its end. */
async function runDemo(args: string[] = []): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [path.join(root, 'scripts/demo.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...demoEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes('Ctrl-C stops them') && child.exitCode === null && !child.killed) child.kill('SIGINT');
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, output };
}

const connections = () => createConnectionQueries(testEnv.db).list();
const made = async () => (JSON.parse(await readFile(path.join(demoEnv.DATA_DIR ?? '', 'demo-made.json'), 'utf8')) as { connections: string[] }).connections;
const byProvider = (rows: Awaited<ReturnType<typeof connections>>) => rows.reduce<Record<string, number>>((counts, row) => ({ ...counts, [row.provider]: (counts[row.provider] ?? 0) + 1 }), {});

describe('npm run demo: what it made', { tags: ['needs-radicale', 'needs-dovecot'] }, () => {
  it('pauses everything it made on Ctrl-C, re-uses it when run again, and --remove removes it all and nothing else', async () => {
    // The operator's own connection, of a kind the demo also makes: never the demo's to pause or remove.
    const own = await fetch(`${consoleService.address}/api/connections`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'health-auto-export', displayName: 'My phone' }),
    });
    expect(own.status).toBe(201);
    const ownId = ((await own.json()) as { connection: { id: string } }).connection.id;

    const first = await runDemo();
    expect(first.code, first.output).toBe(0);
    const afterFirst = (await connections()).filter((row) => row.id !== ownId);
    // Every provider: hub, phone, bridge, Microsoft, Google, Gmail, wearable, aggregator, and iCloud (a demo sign-in, issue 42).
    expect(Object.keys(byProvider(afterFirst)).sort(), first.output).toEqual(['gmail', 'google', 'health-auto-export', 'home-assistant', 'icloud', 'microsoft', 'plaid', 'simplefin', 'whoop']);
    expect((await made()).sort()).toEqual(afterFirst.map((row) => row.id).sort());
    for (const row of afterFirst) expect(row.status, `${row.provider} ${row.display_name}`).toBe('paused');
    expect((await createConnectionQueries(testEnv.db).get(ownId))?.status).toBe('active');

    const second = await runDemo();
    expect(second.code, second.output).toBe(0);
    const afterSecond = (await connections()).filter((row) => row.id !== ownId);
    expect(byProvider(afterSecond), second.output).toEqual(byProvider(afterFirst));
    expect((await made()).sort()).toEqual(afterSecond.map((row) => row.id).sort());
    for (const row of afterSecond) expect(row.status, `${row.provider} ${row.display_name}`).toBe('paused');

    const removed = await runDemo(['--remove']);
    expect(removed.code, removed.output).toBe(0);
    expect((await connections()).map((row) => row.id)).toEqual([ownId]);
    expect(await made()).toEqual([]);
  }, 240_000);
});
