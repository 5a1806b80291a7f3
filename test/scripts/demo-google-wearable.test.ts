import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { demoApps } from '../../scripts/demo/demo-apps.ts';
import { demoLedger } from '../../scripts/demo/demo-ledger.ts';
import { connectDemoGoogleAndWearable } from '../../scripts/demo/google-and-wearable.ts';
import { freePort } from '../../scripts/local-services/index.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// `npm run demo`'s Google account and wearable (issue 17): the doubles signed in through the Console with no
// real account, and synced. Since issue 42 the gateway has no setting for them: each is a demo sign-in
// marked with its double's loopback origin, and the doubles may be on any port.
const testEnv = useTestEnvironment();
const ports = { google: 0, wearable: 0 };
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'pcg-demo-apps-'));
const ledger = demoLedger(dataDir);

/** The demo as `npm run demo` runs it: the saved applications read once per run, the ledger kept in DATA_DIR. */
async function runDemo(lines: string[]) {
  return connectDemoGoogleAndWearable(consoleService.address, ports, await demoApps(consoleService.address, ledger), (line) => lines.push(line));
}

/** The client id the Console's own (not demo) sign-in for `provider` sends the browser with: the saved application's. */
async function savedClientId(provider: string): Promise<string | null> {
  const started = await fetch(`${consoleService.address}/api/connect/${provider}/start`, { redirect: 'manual' });
  return new URL(started.headers.get('location') ?? '').searchParams.get('client_id');
}

async function saveOperatorApp(provider: string, clientId: string): Promise<void> {
  const saved = await fetch(`${consoleService.address}/api/connect/${provider}/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ clientId, clientSecret: 'operator-secret' }) });
  expect(saved.status).toBe(204);
}

beforeAll(async () => {
  ports.google = await freePort();
  ports.wearable = await freePort();
  const env = testEnv.env({
    CREDENTIALS_KEY: randomBytes(32).toString('base64'),
    REST_PORT: '0',
    SOURCE_TIMEOUT_MS: '2000',
  });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm run demo: a demo Google account and a demo wearable', () => {
  it('signs in Google (calendar and contacts), Gmail and the wearable with no real account and no setting on the gateway, and each connection syncs', async () => {
    const lines: string[] = [];
    const demo = await runDemo(lines);
    try {
      expect(lines.filter((line) => line.startsWith('signed in the demo'))).toHaveLength(3);
      expect(ledger.apps().sort()).toEqual(['gmail', 'google', 'whoop']);
      const connections = await createConnectionQueries(testEnv.db).list();
      expect(connections.map((row) => `${row.provider}/${row.sector}`).sort()).toEqual(['gmail/mail', 'google/calendar', 'google/contacts', 'whoop/health']);
      await waitFor(async () => ((await createConnectionQueries(testEnv.db).list()).every((row) => row.last_synced_at && !row.last_error) ? true : undefined), 20_000, 'every demo connection synced');
      const count = async (table: string) => Number(await testEnv.db.oneFirst(sql.unsafe`SELECT count(*) FROM ${sql.identifier([table])}`));
      for (const table of ['calendar_events', 'contacts_entries', 'mail_messages', 'health_workouts']) expect(await count(table), table).toBeGreaterThan(0);
      // Each sign-in holds its double's origin as its demo mark, and nothing else points anywhere.
      const marks = await testEnv.db.any(sql.unsafe`SELECT provider, demo_endpoints FROM sign_ins ORDER BY provider`);
      expect(marks).toEqual([
        { provider: 'gmail', demo_endpoints: { GOOGLE_BASE_URL: `http://127.0.0.1:${ports.google}` } },
        { provider: 'google', demo_endpoints: { GOOGLE_BASE_URL: `http://127.0.0.1:${ports.google}` } },
        { provider: 'whoop', demo_endpoints: { WHOOP_BASE_URL: `http://127.0.0.1:${ports.wearable}` } },
      ]);
    } finally {
      await demo.close();
    }
  });

  it("leaves an application the operator saved since the demo's alone, and skips that provider's demo saying why", async () => {
    // After the run above the demo's own applications are saved; the operator then saves a real one for Gmail.
    await saveOperatorApp('gmail', 'operator-gmail.apps.googleusercontent.com');
    const lines: string[] = [];
    const demo = await runDemo(lines);
    try {
      expect(lines.some((line) => line.startsWith('Gmail demo skipped: an application of your own is saved for gmail'))).toBe(true);
      expect(lines.filter((line) => line.startsWith('signed in again the demo'))).toHaveLength(2);
      expect(await savedClientId('gmail')).toBe('operator-gmail.apps.googleusercontent.com');
      expect(ledger.apps().sort()).toEqual(['google', 'whoop']);
    } finally {
      await demo.close();
    }
  });

  it('never saves over an application the demo did not save, whatever its ledger held before', async () => {
    // A ledger from before the demo kept its applications: it owns none.
    rmSync(ledger.file, { force: true });
    await saveOperatorApp('whoop', 'operator-whoop-client');
    const lines: string[] = [];
    const demo = await runDemo(lines);
    try {
      for (const name of ['Google (calendar and contacts)', 'Gmail', 'wearable']) {
        expect(lines.some((line) => line.startsWith(`${name} demo skipped: an application of your own is saved`)), name).toBe(true);
      }
      expect(await savedClientId('whoop')).toBe('operator-whoop-client');
      expect(await savedClientId('gmail')).toBe('operator-gmail.apps.googleusercontent.com');
    } finally {
      await demo.close();
    }
  });
});
