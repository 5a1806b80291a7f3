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

// `npm run demo`'s Google account and wearable (issue 17): the doubles signed in through the Console with no
// real account, and synced. Since issue 42 the gateway has no setting for them: each is a demo sign-in
// marked with its double's loopback origin, and the doubles may be on any port.
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
  });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
});

describe('npm run demo: a demo Google account and a demo wearable', () => {
  it('signs in Google (calendar and contacts), Gmail and the wearable with no real account and no setting on the gateway, and each connection syncs', async () => {
    const lines: string[] = [];
    const demo = await connectDemoGoogleAndWearable(consoleService.address, ports, (line) => lines.push(line));
    try {
      expect(lines.filter((line) => line.startsWith('signed in the demo'))).toHaveLength(3);
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
});
