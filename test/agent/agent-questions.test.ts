import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { PAGE_BUDGET_CHARS } from '@pcg/shared/query';
import { CATALOGUE } from '@pcg/shared/sectors';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { financeData } from '../../scripts/demo/finance.ts';
import { healthData } from '../../scripts/demo/health.ts';
import { calendarData, contactsData, mailData } from '../../scripts/demo/people.ts';
import { seedDemo } from '../../scripts/demo/seed.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { connectAgent, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { countedToolCalls } from '../support/counted-tool-calls.ts';

/**
 * Issue 20, done when: an agent scripted over the official MCP client, on the demo data, answers six
 * everyday questions in at most two calls each after one describe_context and one get_schema, using only
 * object, field and value names it read there. The home sector has two connections: the demo's seeded one
 * (no source to ask) and a hub. Every answer is checked against the seed data computed here.
 */
const testEnv = useTestEnvironment();
/** Wednesday 18 November 2026, 15:00 UTC: 16:00 in Berlin, the person's zone. */
const NOW = new Date('2026-11-18T15:00:00.000Z');
const ZONE = 'Europe/Berlin';
let hub: HomeAssistantDouble;
let worker: RunningSyncWorker;
let consoleService: RunningConsole;
let gateway: RunningGateway;
let agent: Client;
let hubId: string;

type Json = Record<string, unknown>;
const tools = countedToolCalls(() => agent);
const call = (name: string, args: Json) => tools.call(name, args);

/** What the agent read at the start; every name it uses must appear in it. */
let readText = '';
let schema: { objects: Array<{ name: string; fields: Array<{ name: string; known_values?: string[] }> }>; conventions: { relative_dates: string[]; buckets: string[] } };
const read = <T extends string>(name: T): T => {
  expect(readText, `the agent read '${name}' in get_schema or describe_context`).toContain(JSON.stringify(name));
  return name;
};
const knownValue = (object: string, field: string, value: string) => {
  const values = schema.objects.find((candidate) => candidate.name === object)?.fields.find((candidate) => candidate.name === field)?.known_values ?? [];
  expect(values, `${object}.${field} lists '${value}'`).toContain(value);
  return value;
};
/** A last_N_days value, built from the pattern get_schema states. */
const lastDays = (days: number) => {
  expect(schema.conventions.relative_dates).toContain('last_N_days');
  return `last_${days}_days`;
};
const question = async <T>(ask: () => Promise<T>): Promise<T> => {
  const before = tools.calls;
  const answer = await ask();
  expect(tools.calls - before, 'calls for this question').toBeLessThanOrEqual(2);
  return answer;
};

const cents = (amount: string) => Math.round(Number(amount) * 100);
const money = (total: number) => (total / 100).toFixed(2);
/** Monday of the week of a YYYY-MM-DD day. */
const monday = (day: string) => {
  const at = Date.parse(`${day}T00:00:00Z`);
  return new Date(at - ((new Date(at).getUTCDay() + 6) % 7) * 86_400_000).toISOString().slice(0, 10);
};

beforeAll(async () => {
  await seedDemo(testEnv.db, NOW.getTime());
  hub = await startHomeAssistantDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: randomBytes(32).toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  gateway = await startTestGateway(testEnv, env, { now: () => NOW });
  const console_ = (method: string, path: string, body: unknown) =>
    fetch(`${consoleService.address}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect((await console_('PUT', '/api/settings', { timeZone: ZONE })).status).toBe(200);
  const created = await console_('POST', '/api/connections', { provider: 'home-assistant', displayName: 'Hub', credentials: { baseUrl: hub.url, token: hub.token } });
  hubId = ((await created.json()) as { connection: { id: string } }).connection.id;
  await waitFor(async () => {
    const response = await fetch(`${consoleService.address}/api/connections`);
    const { connections } = (await response.json()) as { connections: Array<{ id: string; lastSyncedAt: string | null }> };
    return connections.find((connection) => connection.id === hubId)?.lastSyncedAt ? true : undefined;
  }, 15_000, 'the first sync of the hub');
  agent = (await connectAgent(gateway.address, await createTestAgent(testEnv.db, { name: 'scripted-agent', sectors: ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'] }))).client;
  const context = await call('describe_context', {});
  schema = (await call('get_schema', {})) as typeof schema;
  readText = JSON.stringify([context, schema]);
  expect(context).toMatchObject({ time_zone: ZONE, today: '2026-11-18' });
}, 90_000);
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  await consoleService?.close();
  await worker?.close();
  await hub?.close();
});

describe('six everyday questions, each in at most two calls', () => {
  it('what did I spend on dining last month', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('finance.transaction'),
        where: [
          { field: read('category'), op: 'eq', value: knownValue('finance.transaction', 'category', 'dining') },
          { field: read('posted_on'), op: 'eq', value: read('last_month') },
          { field: read('amount'), op: 'lt', value: 0 },
        ],
        aggregate: { metrics: [{ fn: 'sum', field: read('amount') }] },
      }),
    );
    const expected = financeData(NOW.getTime()).transactions
      .filter((t) => t.category === 'dining' && typeof t.posted_on === 'string' && t.posted_on >= '2026-10-01' && t.posted_on <= '2026-10-31' && Number(t.amount) < 0)
      .reduce((total, t) => total + cents(String(t.amount)), 0);
    expect(answer.rows).toEqual([{ sum_amount: money(expected) }]);
    expect(answer.resolved_dates).toEqual([expect.objectContaining({ relative: 'last_month', from: '2026-10-01', to: '2026-10-31', time_zone: ZONE })]);
  });

  it('my 3 biggest expenses this week', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('finance.transaction'),
        where: [{ field: read('posted_on'), op: 'eq', value: read('this_week') }, { field: read('amount'), op: 'lt', value: 0 }],
        order_by: [{ field: read('amount'), direction: 'asc' }],
        select: [read('merchant_name'), read('amount'), read('posted_on')],
        limit: 3,
      }),
    );
    // Berlin's week of Wednesday 18 November runs from Monday the 16th to Sunday the 22nd.
    const expected = financeData(NOW.getTime()).transactions
      .filter((t) => typeof t.posted_on === 'string' && t.posted_on >= '2026-11-16' && t.posted_on <= '2026-11-22' && Number(t.amount) < 0)
      .map((t) => String(t.amount))
      .sort((a, b) => Number(a) - Number(b))
      .slice(0, 3);
    expect((answer.rows as Json[]).map((row) => row.amount)).toEqual(expected);
  });

  it('average resting heart rate per week over the last 8 weeks', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('health.sample'),
        where: [{ field: read('metric'), op: 'eq', value: knownValue('health.sample', 'metric', 'resting_heart_rate') }, { field: read('start_at'), op: 'gte', value: lastDays(56) }],
        aggregate: { group_by: [{ field: read('start_at'), bucket: read('week') }], metrics: [{ fn: 'avg', field: read('value') }] },
        order_by: [{ field: 'start_at_week', direction: 'asc' }],
      }),
    );
    // 56 local days, 24 September to 18 November; samples start at UTC midnight, the same date in Berlin.
    const weeks = new Map<string, number[]>();
    for (const sample of healthData(NOW.getTime()).samples) {
      const day = String(sample.start_at).slice(0, 10);
      if (sample.metric !== 'resting_heart_rate' || day < '2026-09-24') continue;
      weeks.set(monday(day), [...(weeks.get(monday(day)) ?? []), Number(sample.value)]);
    }
    const expected = [...weeks.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([week, values]) => [week, values.reduce((a, b) => a + b, 0) / values.length] as const);
    const rows = answer.rows as Array<{ start_at_week: string; avg_value: number }>;
    expect(rows.map((row) => row.start_at_week)).toEqual(expected.map(([week]) => week));
    rows.forEach((row, i) => expect(row.avg_value).toBeCloseTo(expected[i]?.[1] ?? NaN, 9));
    expect(rows.length).toBeGreaterThanOrEqual(8);
  });

  it('which sender wrote most in the last 30 days', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('mail.message'),
        where: [{ field: read('received_at'), op: 'gte', value: lastDays(30) }],
        aggregate: { group_by: [read('from_address')], metrics: [{ fn: 'count' }] },
        order_by: [{ field: read('count'), direction: 'desc' }],
        limit: 1,
      }),
    );
    // Berlin's 20 October starts at 22:00 UTC the day before (summer time until the 25th).
    const counts = new Map<string, number>();
    for (const message of mailData(NOW.getTime(), contactsData())) {
      if (String(message.received_at) < '2026-10-19T22:00:00.000Z') continue;
      const address = /<([^<>]+)>/.exec(message.from)?.[1]?.toLowerCase() ?? '';
      counts.set(address, (counts.get(address) ?? 0) + 1);
    }
    const most = Math.max(...counts.values());
    const [top] = answer.rows as Array<{ from_address: string; count: number }>;
    expect(top?.count).toBe(most);
    expect(counts.get(top?.from_address ?? '')).toBe(most);
  });

  it('is the living-room light on right now (two home connections, one with no source to ask)', async () => {
    hub.setState('light.living_room', 'on');
    const answer = await question(() =>
      call('fetch_live', {
        object: read('home.entity'),
        where: [{ field: read('domain'), op: 'eq', value: knownValue('home.entity', 'domain', 'light') }, { field: read('friendly_name'), op: 'contains', value: 'living room' }],
      }),
    );
    expect(answer.rows).toEqual([expect.objectContaining({ connection_id: hubId, entity_id: 'light.living_room', state: 'on' })]);
    const reports = answer.connections as Array<{ connection_id: string; status: string; reason?: string }>;
    expect(reports.find((report) => report.connection_id === hubId)).toMatchObject({ status: 'answered', row_count: 1 });
    expect(reports.find((report) => report.connection_id !== hubId)).toMatchObject({ status: 'skipped', reason: expect.stringContaining("no connector for provider 'demo'") });
  });

  it("what's on my calendar tomorrow, including multi-day all-day events", async () => {
    const [timed, allDay] = await question(async () => [
      await call('query', { object: read('calendar.event'), where: [{ field: read('start_at'), op: read('overlaps'), value: read('tomorrow') }], select: [read('title'), read('start_at'), read('end_at')] }),
      await call('query', { object: read('calendar.event'), where: [{ field: read('start_date'), op: read('overlaps'), value: read('tomorrow') }], select: [read('title'), read('start_date'), read('end_date')] }),
    ]);
    // Tomorrow in Berlin: Thursday 19 November, 23:00 UTC on the 18th to 23:00 UTC on the 19th.
    const events = calendarData(NOW.getTime());
    const expectedTimed = events
      .filter((event) => !event.all_day && String(event.start_at) < '2026-11-19T23:00:00.000Z' && (String(event.end_at) > '2026-11-18T23:00:00.000Z' || String(event.start_at) >= '2026-11-18T23:00:00.000Z'))
      .map((event) => event.title);
    const expectedAllDay = events.filter((event) => event.all_day && String(event.start_date) <= '2026-11-19' && String(event.end_date) > '2026-11-19').map((event) => event.title);
    expect((timed?.rows as Json[]).map((row) => row.title).sort()).toEqual([...expectedTimed].sort());
    expect((allDay?.rows as Json[]).map((row) => row.title).sort()).toEqual([...expectedAllDay].sort());
    expect(expectedTimed).toContain('Team standup');
    // The conference began yesterday: a filter on its start alone would miss it.
    expect(expectedAllDay).toContain('Conference: Berlin');
  });
});

describe('size-safe pages on the demo data', () => {
  it.each(CATALOGUE.map((object) => object.name))('never serves a page of %s over the budget, by default or at limit 200 with select omitted', async (object) => {
    for (const limit of [undefined, 200]) {
      let cursor: string | undefined;
      let rows = 0;
      for (let page = 0; page < 200; page += 1) {
        const answer = (await agent.callTool({ name: 'query', arguments: { object, ...(limit ? { limit } : {}), ...(cursor ? { cursor } : {}) } })) as { content: Array<{ text: string }> };
        const text = answer.content[0]?.text ?? '';
        expect(text.length, `${object} page ${page}`).toBeLessThanOrEqual(PAGE_BUDGET_CHARS);
        const result = JSON.parse(text) as { rows: unknown[]; has_more: boolean; next_cursor?: string };
        rows += result.rows.length;
        if (!result.has_more) break;
        expect(result.next_cursor).toEqual(expect.any(String));
        cursor = result.next_cursor;
      }
      expect(rows, `every ${object} row is served once`).toBe(await countOf(object));
    }
  });
});

async function countOf(object: string): Promise<number> {
  const answer = (await agent.callTool({ name: 'query', arguments: { object, aggregate: { metrics: [{ fn: 'count' }] } } })) as { content: Array<{ text: string }> };
  return ((JSON.parse(answer.content[0]?.text ?? '') as { rows: Array<{ count: number }> }).rows[0]?.count ?? 0);
}
