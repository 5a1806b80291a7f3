import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDestinationStore, parseDestination } from '@pcg/shared/activity';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { withAlertNotifications } from '../src/alert-notifications.ts';
import { syncWorkerConfigSchema } from '../src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../src/service.ts';
import { TEST_KEY, workerEnv } from './helpers.ts';

const testEnv = useTestEnvironment();
let worker: RunningSyncWorker | undefined;
let server: Server;
const received: Array<{ path: string; body: unknown }> = [];

beforeAll(async () => {
  // A local receiver shaped as ntfy's JSON publishing: POST JSON to the server's root (https://docs.ntfy.sh/publish/#publish-as-json).
  server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => {
      received.push({ path: request.url ?? '', body: JSON.parse(text) });
      response.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await worker?.close();
  await new Promise((resolve) => server.close(resolve));
});

describe('the sync-worker sends alerts (issue 41)', () => {
  it('sends an alert raised after the destination was saved to it, through its own process', async () => {
    const { port } = server.address() as AddressInfo;
    await createDestinationStore(testEnv.db, TEST_KEY).save(parseDestination(`http://127.0.0.1:${port}/pcg`));
    await testEnv.db.query(sql.unsafe`
      INSERT INTO activity_alerts (user_id, kind, agent_id, sector, occurred_at, dedupe_key) VALUES (1, 'first_sector', 'claude', 'home', now(), 'test')`);
    worker = await withAlertNotifications(startSyncWorker)(loadConfig(syncWorkerConfigSchema, testEnv.env(workerEnv())), createCapturingLogger('sync-worker').log);
    await waitFor(() => (received.length > 0 ? true : undefined), 10_000, 'the alert at the receiver');
    expect(received).toEqual([{ path: '/', body: { topic: 'pcg', title: 'Personal Context Gateway alert', message: 'claude used home for the first time', priority: 3, tags: ['new'] } }]);
  });
});
