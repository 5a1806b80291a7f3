import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { connectDemoGoogleAndWearable } from '../../scripts/demo/google-and-wearable.ts';
import { freePort } from '../../scripts/local-services/index.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';

// `npm run demo`'s Google account and wearable (issue 17): the doubles on the ports the gateway was
// started with, signed in through the Console with no real account, and synced.
const testEnv = useTestEnvironment();
const ports = { google: 0, wearable: 0 };
let consoleService: RunningConsole;
let worker: RunningSyncWorker;

beforeAll(async () => {
  ports.google = await freePort();
  ports.wearable = await freePort();
  const env = testEnv.env({
    CREDENTIALS_KEY: randomBytes(32).toString('base64'),
    REST_PORT: '0',
    SOURCE_TIMEOUT_MS: '2000',
    GOOGLE_BASE_URL: `http://127.0.0.1:${ports.google}`,
    WHOOP_BASE_URL: `http://127.0.0.1:${ports.wearable}`,
  });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
});

describe('npm run demo: a demo Google account and a demo wearable', () => {
  it('says how to start the gateway, and connects nothing, when it does not point at the demo doubles', async () => {
    const lines: string[] = [];
    const demo = await connectDemoGoogleAndWearable(consoleService.address, { google: await freePort(), wearable: await freePort() }, (line) => lines.push(line));
    await demo.close();
    expect(lines.filter((line) => line.includes('demo skipped: start the gateway with'))).toHaveLength(3);
    expect(await createConnectionQueries(testEnv.db).list()).toEqual([]);
  });

  it('signs in Google (calendar and contacts), Gmail and the wearable with no real account, and each connection syncs', async () => {
    const lines: string[] = [];
    const demo = await connectDemoGoogleAndWearable(consoleService.address, ports, (line) => lines.push(line));
    try {
      expect(lines.filter((line) => line.startsWith('signed in the demo'))).toHaveLength(3);
      const connections = await createConnectionQueries(testEnv.db).list();
      expect(connections.map((row) => `${row.provider}/${row.sector}`).sort()).toEqual(['gmail/mail', 'google/calendar', 'google/contacts', 'whoop/health']);
      await waitFor(async () => ((await createConnectionQueries(testEnv.db).list()).every((row) => row.last_synced_at && !row.last_error) ? true : undefined), 20_000, 'every demo connection synced');
      const count = async (table: string) => Number(await testEnv.db.oneFirst(sql.unsafe`SELECT count(*) FROM ${sql.identifier([table])}`));
      for (const table of ['calendar_events', 'contacts_entries', 'mail_messages', 'health_workouts']) expect(await count(table), table).toBeGreaterThan(0);
    } finally {
      await demo.close();
    }
  });
});
