import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { freePort } from '../../scripts/local-services/index.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// Issue 42 "The demo in one command": the gateway runs with no provider setting at all (no base URL, no
// SIMPLEFIN_ALLOW_LOOPBACK, ICLOUD_RESOLVE or ICLOUD_EXTRA_CA_FILE), and `npm run demo` still connects all
// nine providers in every sector, each sign-in source through a demo sign-in marked with its local stand-in
// (iCloud: the demo's Radicale and Dovecot, with TLS verified against the demo's CA).
const testEnv = useTestEnvironment();
const root = path.resolve(import.meta.dirname, '../..');
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let demoEnv: Record<string, string>;

beforeAll(async () => {
  const env = testEnv.env({ CREDENTIALS_KEY: randomBytes(32).toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '3000' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  demoEnv = {
    ...testEnv.env(),
    BIND_HOST: '127.0.0.1',
    REST_PORT: new URL(consoleService.address).port,
    ICLOUD_RESOLVE: '',
    DEMO_HUB_PORT: String(await freePort()),
    DEMO_GRAPH_PORT: String(await freePort()),
    DEMO_GOOGLE_PORT: String(await freePort()),
    DEMO_WEARABLE_PORT: String(await freePort()),
    DEMO_AGGREGATOR_PORT: String(await freePort()),
    DEMO_RADICALE_PORT: String(await freePort()),
    DEMO_DOVECOT_PORT: String(await freePort()),
  };
}, 60_000);
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
});

const connections = () => createConnectionQueries(testEnv.db).list();

/** Runs the demo until its sources keep running and `ready` holds, then presses Ctrl-C; or `--remove` to its end. */
async function runDemo(args: string[], ready: () => Promise<boolean> = async () => true): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [path.join(root, 'scripts/demo.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...demoEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let waiting = false;
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (!waiting && output.includes('Ctrl-C stops them')) {
      waiting = true;
      void waitFor(async () => ((await ready()) ? true : undefined), 60_000, 'the demo connections synced')
        .catch(() => undefined)
        .then(() => child.kill('SIGINT'));
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, output };
}

describe('npm run demo with no setting on the gateway', { tags: ['needs-radicale', 'needs-dovecot'] }, () => {
  it('connects all nine providers in every sector, each syncing from its stand-in; again makes no second connection; --remove leaves none', async () => {
    const allSynced = async () => {
      const rows = (await connections()).filter((row) => row.provider !== 'health-auto-export');
      return rows.length > 0 && rows.every((row) => row.last_synced_at !== null && row.last_error === null);
    };
    const first = await runDemo([], allSynced);
    expect(first.code, first.output).toBe(0);
    const made = await connections();
    expect([...new Set(made.map((row) => row.provider))].sort(), first.output).toEqual(['gmail', 'google', 'health-auto-export', 'home-assistant', 'icloud', 'microsoft', 'plaid', 'simplefin', 'whoop']);
    // Every sector the issue names: finance 2, health 2, mail 3, contacts 3, calendar 3, home 1.
    const sources = (sector: string) => [...new Set(made.filter((row) => row.sector === sector).map((row) => row.provider))].sort();
    expect(sources('finance')).toEqual(['plaid', 'simplefin']);
    expect(sources('health')).toEqual(['health-auto-export', 'whoop']);
    expect(sources('mail')).toEqual(['gmail', 'icloud', 'microsoft']);
    expect(sources('contacts')).toEqual(['google', 'icloud', 'microsoft']);
    expect(sources('calendar')).toEqual(['google', 'icloud', 'microsoft']);
    expect(sources('home')).toEqual(['home-assistant']);
    for (const row of made.filter((candidate) => candidate.provider !== 'health-auto-export')) expect(row.last_synced_at, `${row.provider}/${row.sector} synced`).not.toBeNull();
    // The sources that sign in at a provider are demo sign-ins, each marked with loopback origins only (the hub's token needs none).
    const marks = await testEnv.db.any(sql.type(z.object({ provider: z.string(), demo_endpoints: z.record(z.string(), z.string()) }))`SELECT provider, demo_endpoints FROM sign_ins WHERE demo_endpoints IS NOT NULL ORDER BY provider`);
    expect(marks.map((row) => row.provider)).toEqual(['gmail', 'google', 'icloud', 'microsoft', 'plaid', 'simplefin', 'whoop']);
    for (const row of marks) {
      for (const [name, value] of Object.entries(row.demo_endpoints)) {
        if (name === 'ICLOUD_CA_PEM') expect(value).toContain('-----BEGIN CERTIFICATE-----');
        else if (name === 'ICLOUD_RESOLVE') for (const entry of value.split(',')) expect(entry).toMatch(/^(caldav\.icloud\.com|contacts\.icloud\.com|imap\.mail\.me\.com)=127\.0\.0\.1:\d+$/);
        else expect(value).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      }
    }

    const second = await runDemo([]);
    expect(second.code, second.output).toBe(0);
    const again = await connections();
    expect(again.map((row) => `${row.provider}/${row.sector}`).sort()).toEqual(made.map((row) => `${row.provider}/${row.sector}`).sort());

    const removed = await runDemo(['--remove']);
    expect(removed.code, removed.output).toBe(0);
    expect(await connections()).toEqual([]);
  }, 300_000);
});
