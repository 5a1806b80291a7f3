import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sql } from '@pcg/shared/db';
import { GOOGLE_CONTACTS_SCOPE } from '@pcg/shared/providers';
import { startGoogleDouble, type GoogleDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { connectAgent } from '../../services/gateway/test/gateway-harness.ts';
import { signInThroughConsole } from '../support/console-sign-in.ts';

// Issue 17, done when: an all-day event reads back as the same local date in a UTC gateway and a
// UTC−10 / UTC+14 one. The sync-worker and the gateway run as child processes started with `TZ`, so the
// whole process (every Date, every Intl default) is in that zone from its first line.
const root = path.resolve(import.meta.dirname, '../..');
const testEnv = useTestEnvironment();
const key = randomBytes(32).toString('base64');
let google: GoogleDouble;
let consoleService: RunningConsole;
let connectionId = '';

type Child = { process: ChildProcess; output: () => string };
function startService(service: 'gateway' | 'sync-worker', zone: string, env: Record<string, string>): Promise<Child & { ready: Record<string, unknown> }> {
  let output = '';
  const child = spawn(process.execPath, [path.join(root, `services/${service}/src/main.ts`)], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env, TZ: zone, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return waitFor(
    () => {
      const line = output.split('\n').find((candidate) => candidate.includes(`"msg":"${service} ready"`));
      return line ? { process: child, output: () => output, ready: JSON.parse(line) as Record<string, unknown> } : undefined;
    },
    30_000,
    `${service} ready under TZ=${zone}\n${output}`,
  );
}
const stop = (child: Child | undefined) =>
  new Promise<void>((resolve) => {
    if (!child || child.process.exitCode !== null) return resolve();
    child.process.once('exit', () => resolve());
    child.process.kill('SIGTERM');
  });

async function signIn() {
  google.state.deniedScopes = [GOOGLE_CONTACTS_SCOPE];
  const answer = await signInThroughConsole(consoleService.address, 'google');
  expect(answer.status).toBe(200);
  return (answer.body as { connections: Array<{ id: string }> }).connections[0]?.id ?? '';
}
const lastSynced = async () => (await createConnectionQueries(testEnv.db).get(connectionId))?.last_synced_at;

const env = () => testEnv.env({ CREDENTIALS_KEY: key, REST_PORT: '0', MCP_HTTP_PORT: '0', SOURCE_TIMEOUT_MS: '2000', GOOGLE_BASE_URL: google.url });

beforeAll(async () => {
  google = await startGoogleDouble();
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env()), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  const saved = await fetch(`${consoleService.address}/api/connect/google/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(google.client) });
  expect(saved.status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
  await google?.close();
});

/** The zones and the offset (minutes, as getTimezoneOffset counts: UTC minus local) each has on 1 January 2026. */
const ZONES = [
  ['UTC', 0],
  ['Pacific/Honolulu', 600],
  ['Pacific/Kiritimati', -840],
] as const;

describe('an all-day Google event keeps its local dates whatever the processes\' time zone', () => {
  it.each(ZONES)('synced and read back with the sync-worker and the gateway under TZ=%s', async (zone, offset) => {
    const probe = spawnSync(process.execPath, ['-e', 'console.log(new Date(2026, 0, 1).getTimezoneOffset())'], { env: { TZ: zone }, encoding: 'utf8' });
    expect(Number(probe.stdout.trim()), `TZ=${zone} changes a child's zone`).toBe(offset);

    let worker: Child | undefined;
    let gateway: (Child & { ready: Record<string, unknown> }) | undefined;
    let agent: Client | undefined;
    try {
      worker = await startService('sync-worker', zone, env());
      gateway = await startService('gateway', zone, env());
      if (!connectionId) {
        connectionId = await signIn();
        await waitFor(async () => ((await lastSynced()) ? true : undefined), 20_000, 'the first sync');
      }
      // Written again under this zone: the rows go, and the next sync is a full one.
      await testEnv.db.query(sql.unsafe`DELETE FROM calendar_events WHERE connection_id = ${connectionId}::uuid`);
      await testEnv.db.query(sql.unsafe`UPDATE connections SET sync_cursor = NULL WHERE id = ${connectionId}::uuid`);
      const before = await lastSynced();
      expect((await fetch(`${consoleService.address}/api/connections/${connectionId}/sync`, { method: 'POST' })).status).toBe(202);
      await waitFor(async () => ((await lastSynced()) && (await lastSynced()) !== before ? true : undefined), 20_000, 'the sync');

      agent = (await connectAgent(String(gateway.ready.address), await createTestAgent(testEnv.db, { name: `agent-${zone}`, sectors: ['calendar'] }))).client;
      const answer = (await agent.callTool({
        name: 'query',
        arguments: { object: 'calendar.event', where: [{ field: 'all_day', op: 'eq', value: true }], select: ['title', 'all_day', 'start_date', 'end_date', 'start_at'] },
      })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(answer.isError, answer.content[0]?.text).toBeFalsy();
      const rows = (JSON.parse(answer.content[0]?.text ?? '{}') as { rows: Array<Record<string, unknown>> }).rows;
      for (const [title, id] of [['Team offsite', 'offsite'], ['Grandma birthday', 'birthday']] as const) {
        const event = google.calendar.events.get(id);
        const expected = event && 'date' in event.start && 'date' in event.end ? { start_date: event.start.date, end_date: event.end.date } : undefined;
        expect(rows.find((row) => row.title === title), `${title} under TZ=${zone}`).toMatchObject({ all_day: true, start_at: null, ...expected });
      }
    } finally {
      await agent?.close();
      await stop(gateway);
      await stop(worker);
    }
  }, 90_000);
});
