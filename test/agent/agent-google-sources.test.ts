import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { startGoogleDouble, type GoogleDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { connectAgent, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { signInThroughConsole } from '../support/console-sign-in.ts';
import { countedToolCalls } from '../support/counted-tool-calls.ts';

/**
 * Issue 17, done when: an agent scripted over the official MCP client answers "what meetings do I have
 * tomorrow, including all-day ones" and "who emailed me most this week" from Google Calendar and Gmail,
 * synced from the local Google, in at most three calls each (get_schema included), using only object,
 * field and value names it read in get_schema. The person's zone is UTC, so "tomorrow" is the double's
 * next UTC date.
 */
const testEnv = useTestEnvironment();
const DAY_MS = 86_400_000;
let google: GoogleDouble;
let worker: RunningSyncWorker;
let consoleService: RunningConsole;
let gateway: RunningGateway;
let agent: Client;

type Json = Record<string, unknown>;
const tools = countedToolCalls(() => agent);
const call = (name: string, args: Json) => tools.call(name, args);

/** The tools' own descriptions (tools/list, not a tool call): how a metric's output column is named. */
let toolsText = '';
/** What the agent read in this question's get_schema; every name it then uses must appear in it. */
let readText = '';
const read = <T extends string>(name: T): T => {
  expect(readText, `the agent read '${name}' in get_schema`).toContain(JSON.stringify(name));
  return name;
};
/** A bare count's column, as the query tool's input schema names it. */
const countColumn = () => {
  expect(toolsText).toContain('count for a bare count');
  return 'count';
};
/** A value get_schema lists among a field's known values. */
const knownValue = (object: string, field: string, value: string) => {
  const schema = JSON.parse(readText) as { objects: Array<{ name: string; fields: Array<{ name: string; known_values?: string[] }> }> };
  expect(schema.objects.find((candidate) => candidate.name === object)?.fields.find((candidate) => candidate.name === field)?.known_values, `${object}.${field} lists '${value}'`).toContain(value);
  return value;
};
/** A last_N_days value, built from the pattern get_schema states. */
const lastDays = (days: number) => {
  expect(readText).toContain(JSON.stringify('last_N_days'));
  return `last_${days}_days`;
};
/** One question: get_schema first, then the agent's queries; three calls at most in all. */
const question = async <T>(ask: () => Promise<T>): Promise<T> => {
  const before = tools.calls;
  readText = JSON.stringify(await call('get_schema', {}));
  const answer = await ask();
  expect(tools.calls - before, 'calls for this question').toBeLessThanOrEqual(3);
  return answer;
};

async function signIn(provider: 'google' | 'gmail'): Promise<string[]> {
  const saved = await fetch(`${consoleService.address}/api/connect/${provider}/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(google.client) });
  expect(saved.status).toBe(204);
  const answer = await signInThroughConsole(consoleService.address, provider);
  expect(answer.status).toBe(200);
  return (answer.body as { connections: Array<{ id: string }> }).connections.map((row) => row.id);
}

const utcDay = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);
const at = (offset: number, time: string) => `${utcDay(offset)}T${time}Z`;

beforeAll(async () => {
  google = await startGoogleDouble();
  // Beside the double's own events: an all-day conference that began yesterday, a call that runs past midnight into tomorrow, and one the day after.
  const primary = 'primary-calendar@example.com';
  google.calendar.add({ id: 'conference', calendarId: primary, summary: 'Conference', start: { date: utcDay(-1) }, end: { date: utcDay(3) } });
  google.calendar.add({ id: 'latecall', calendarId: primary, summary: 'Late call', start: { dateTime: at(0, '23:30:00'), timeZone: 'UTC' }, end: { dateTime: at(1, '00:30:00'), timeZone: 'UTC' } });
  google.calendar.add({ id: 'dayafter', calendarId: primary, summary: 'Day after', start: { dateTime: at(2, '09:00:00'), timeZone: 'UTC' }, end: { dateTime: at(2, '10:00:00'), timeZone: 'UTC' } });
  const env = testEnv.env({ CREDENTIALS_KEY: randomBytes(32).toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', GOOGLE_BASE_URL: google.url });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  gateway = await startTestGateway(testEnv, env);
  const settings = await fetch(`${consoleService.address}/api/settings`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ timeZone: 'UTC' }) });
  expect(settings.status).toBe(200);
  const ids = [...(await signIn('google')), ...(await signIn('gmail'))];
  expect(ids).toHaveLength(3);
  await waitFor(async () => {
    const rows = await Promise.all(ids.map((id) => createConnectionQueries(testEnv.db).get(id)));
    return rows.every((row) => row?.last_synced_at) ? true : undefined;
  }, 20_000, 'the first syncs of calendar, contacts and mail');
  agent = (await connectAgent(gateway.address, await createTestAgent(testEnv.db, { name: 'scripted-agent', sectors: ['mail', 'calendar', 'contacts'] }))).client;
  toolsText = JSON.stringify(await agent.listTools());
}, 90_000);
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  await consoleService?.close();
  await worker?.close();
  await google?.close();
});

describe('questions on Google Calendar and Gmail, each in at most three calls', () => {
  it('what meetings do I have tomorrow, including all-day ones', async () => {
    const [timed, allDay] = await question(async () => [
      await call('query', { object: read('calendar.event'), where: [{ field: read('start_at'), op: read('overlaps'), value: read('tomorrow') }], select: [read('title'), read('start_at'), read('end_at')] }),
      await call('query', { object: read('calendar.event'), where: [{ field: read('start_date'), op: read('overlaps'), value: read('tomorrow') }], select: [read('title'), read('start_date'), read('end_date')] }),
    ]);
    // Tomorrow (UTC): the dentist at 14:00 and the call begun tonight; all day: the two-day offsite, the
    // birthday on the family calendar and the conference that began yesterday. Not the day after's meeting,
    // and not the holiday on the calendar the person did not select.
    expect((timed?.rows as Json[]).map((row) => row.title).sort()).toEqual(['Dentist', 'Late call']);
    expect((allDay?.rows as Json[]).map((row) => row.title).sort()).toEqual(['Conference', 'Grandma birthday', 'Team offsite']);
    expect((allDay?.rows as Json[]).find((row) => row.title === 'Conference')).toMatchObject({ start_date: utcDay(-1), end_date: utcDay(3) });
  });

  it('who emailed me most this week', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('mail.message'),
        where: [{ field: read('received_at'), op: 'gte', value: lastDays(7) }, { field: read('folder'), op: 'ne', value: knownValue('mail.message', 'folder', 'SENT') }],
        aggregate: { group_by: [read('from_address')], metrics: [{ fn: 'count' }] },
        order_by: [{ field: countColumn(), direction: 'desc' }],
        limit: 1,
      }),
    );
    // This week as the last seven days: from the start of the day six days ago (UTC).
    const since = Date.parse(`${utcDay(-6)}T00:00:00Z`);
    const counts = new Map<string, number>();
    for (const message of google.gmail.messages.values()) {
      if (message.internalDate < since || message.labelIds.some((label) => ['SENT', 'SPAM', 'TRASH'].includes(label))) continue;
      const from = message.headers.find((header) => header.name === 'From')?.value ?? '';
      const address = (/<([^<>]+)>/.exec(from)?.[1] ?? from).toLowerCase();
      counts.set(address, (counts.get(address) ?? 0) + 1);
    }
    const most = Math.max(...counts.values());
    expect([...counts.values()].filter((count) => count === most)).toHaveLength(1);
    // Ada wrote under two names and two spellings of her address; Alan wrote more, but weeks ago.
    expect(answer.rows).toEqual([{ from_address: 'ada@example.com', count: most }]);
  });
});
