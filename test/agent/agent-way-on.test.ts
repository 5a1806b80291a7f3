import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '@pcg/shared/cache';
import { whoopDay } from '@pcg/testkit/doubles';
import { createTestAgent, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { healthData } from '../../scripts/demo/health.ts';
import { seedDemo } from '../../scripts/demo/seed.ts';
import { sleepRecord, WhoopSleepSchema } from '../../services/sync-worker/src/connectors/whoop/whoop-mapping.ts';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { connectAgent, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';

/**
 * Issue 34, done when: a scripted agent over the official MCP client, on the demo seed, is told the way
 * on where it went wrong (an object typo, an action that does not exist, an id no record holds), and
 * every answer keeps the spec's shape (spec 4.1: one text block, JSON indented two spaces). Texts the
 * spec fixes are checked as the spec writes them.
 */
const testEnv = useTestEnvironment();
/** Wednesday 18 November 2026, 15:00 UTC. */
const NOW = new Date('2026-11-18T15:00:00.000Z');
const LIGHT = { name: 'home.light.turn_on', sector: 'home', description: 'Turn a light on', input_schema: { type: 'object' } };
const LIGHT_OFF = { name: 'home.light.turn_off', sector: 'home', description: 'Turn a light off', input_schema: { type: 'object' } };
let gateway: RunningGateway;
let agent: Client;
let wearable: string;
let phone: string;
/** The wearable's latest night, not scored yet (WHOOP PENDING_SCORE), and the night before, scored. */
const pendingNight = whoopDay(NOW.getTime(), 0, { scored: false }).sleep;
const scoredNight = whoopDay(NOW.getTime(), 1).sleep;
/** The phone app's record of the scored night: the same night, its own minutes. */
const phoneNight = {
  source_id: 'phone-night-1',
  start_at: new Date(Date.parse(scoredNight.start) + 600_000).toISOString(),
  end_at: new Date(Date.parse(scoredNight.end) - 300_000).toISOString(),
  in_bed_s: 28_200,
  asleep_s: 25_800,
};

type Answer = { isError: boolean; text: string };
/** One tool call as the agent sees it: whether it is a tool error, and the one text block. */
async function call(name: string, args: Record<string, unknown>): Promise<Answer> {
  const answer = (await agent.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ type: string; text: string }> };
  expect(answer.content, 'one text content block (spec 4.1)').toHaveLength(1);
  expect(answer.content[0]?.type).toBe('text');
  return { isError: answer.isError === true, text: answer.content[0]?.text ?? '' };
}
/** A result's JSON, checked to be indented two spaces as spec 4.1 says. */
function json(answer: Answer): Record<string, unknown> {
  expect(answer.isError, answer.text).toBe(false);
  const value = JSON.parse(answer.text) as Record<string, unknown>;
  expect(answer.text).toBe(JSON.stringify(value, null, 2));
  return value;
}

beforeAll(async () => {
  await seedDemo(testEnv.db, NOW.getTime());
  // A hub's action catalogue as its sync stores it on the connection row.
  const hub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant', displayName: 'Hub' });
  await testEnv.db.query(sql.unsafe`UPDATE connections SET actions = ${sql.jsonb([LIGHT, LIGHT_OFF])} WHERE id = ${hub}::uuid`);
  // The wearable's nights as its connector stores them (mapped from WHOOP records), and the phone's push.
  wearable = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'whoop', displayName: 'Wearable' });
  phone = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'health-auto-export', displayName: 'Demo phone' });
  const nights = [pendingNight, scoredNight].map((night) => sleepRecord(WhoopSleepSchema.parse(night)));
  await upsertRecords(testEnv.db, { object: 'health.sleep_session', connectionId: wearable, source: 'whoop', records: nights });
  await upsertRecords(testEnv.db, { object: 'health.sleep_session', connectionId: phone, source: 'health-auto-export', records: [phoneNight] });
  gateway = await startTestGateway(testEnv, {}, { now: () => NOW });
  agent = (await connectAgent(gateway.address, await createTestAgent(testEnv.db, { name: 'way-on-agent', sectors: ['finance', 'health', 'home'] }))).client;
}, 90_000);
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
});

describe('errors that name the way on', () => {
  it('an object named without its sector is refused as spec 5 rule 3 says, naming the objects the agent may read', async () => {
    const answer = await call('query', { object: 'transactions', limit: 5 });
    expect(answer.isError).toBe(true);
    expect(answer.text).toBe(
      "access denied: 'transactions' is not a sector; the sectors are finance, health, mail, contacts, calendar, home; the objects you may read: finance.account, finance.transaction, finance.holding, health.sample, health.workout, health.sleep_session, home.entity; did you mean 'finance.transaction'?",
    );
    const retried = json(await call('query', { object: 'finance.transaction', limit: 5 }));
    expect(retried).toMatchObject({ object: 'finance.transaction', row_count: 5 });
  });

  it('an object typo inside a granted sector names the sector\'s objects', async () => {
    const answer = await call('query', { object: 'finance.transactions' });
    expect(answer).toEqual({
      isError: true,
      text: "unknown object 'finance.transactions'; objects in finance: finance.account, finance.transaction, finance.holding; did you mean 'finance.transaction'?",
    });
  });

  it('an unknown action names the actions the sector offers; one named without its sector is refused, showing the form', async () => {
    const unknown = await call('invoke_action', { name: 'home.light.toggle' });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toBe("unknown action 'home.light.toggle'; list_actions shows the actions home offers: home.light.turn_on, home.light.turn_off");
    const bare = await call('invoke_action', { name: 'light.turn_on' });
    expect(bare).toEqual({
      isError: true,
      text: "access denied: 'light' is not a sector; the sectors are finance, health, mail, contacts, calendar, home; action names start with their sector (<sector>.<domain>.<service>) and list_actions names them; did you mean 'home.light.turn_on'?",
    });
  });

  it('an unknown record id starts with record not found and says where ids come from', async () => {
    const { rows } = json(await call('query', { object: 'finance.transaction', select: ['source_id'], limit: 1 })) as { rows: Array<{ id: string; source_id: string }> };
    const sourceId = rows[0]?.source_id as string;
    const answer = await call('get_record', { object: 'finance.transaction', id: sourceId });
    expect(answer.isError).toBe(true);
    expect(answer.text.startsWith('record not found')).toBe(true);
    expect(answer.text).toBe(
      `record not found: no record of finance.transaction has the id '${sourceId}'. Ids are the id field of query rows (query {"object": "finance.transaction", "select": ["id"]}); source_id is the provider's own id, not a gateway id.`,
    );
    const found = json(await call('get_record', { object: 'finance.transaction', id: rows[0]?.id as string }));
    expect(found).toMatchObject({ object: 'finance.transaction', record: { id: rows[0]?.id } });
  });
});

describe('notes from capabilities', () => {
  it('fetch_live where no connection of the sector can be read live is a tool error that sends the agent to the cache with its data age', async () => {
    const schema = json(await call('get_schema', { sector: 'finance' })) as { objects: Array<{ name: string; notes: string[] }> };
    const accountNotes = schema.objects.find((object) => object.name === 'finance.account')?.notes ?? [];
    expect(accountNotes).toContain(
      "fetch_live cannot read finance.account: none of its providers (Bank-link bridge (SimpleFIN), Bank aggregator (Plaid)) is read live by this gateway; query the cache instead; describe_context gives each connection's data age (data_age_seconds).",
    );
    const context = json(await call('describe_context', {})) as { connections: Array<{ sector: string; display_name: string; data_age_seconds: number }> };
    const finance = context.connections.filter((connection) => connection.sector === 'finance');
    expect(finance.map((connection) => connection.display_name)).toEqual(['Demo finance', 'Demo finance (second source)']);
    const answer = await call('fetch_live', { object: 'finance.account' });
    expect(answer.isError).toBe(true);
    const reasons = finance
      .map((connection) => `${connection.display_name} (demo): no connector for provider 'demo' runs in this gateway (its rows were stored another way, such as the demo seed), so there is no source to ask`)
      .join('; ');
    const ages = finance.map((connection) => `${connection.display_name} ${connection.data_age_seconds} s old`).join(', ');
    expect(answer.text).toBe(
      `finance.account cannot be read live from any active connection: ${reasons}. Query the cache instead: query {"object": "finance.account"} reads the stored rows; data age: ${ages} (data_age_seconds in describe_context).`,
    );
  });

  it('fetch_live on a granted sector with no connection keeps spec 7\'s text', async () => {
    await testEnv.db.query(sql.unsafe`UPDATE connections SET status = 'paused' WHERE sector = 'health'`);
    try {
      expect(await call('fetch_live', { object: 'health.sleep_session' })).toEqual({ isError: true, text: "no active connection for sector 'health'" });
    } finally {
      await testEnv.db.query(sql.unsafe`UPDATE connections SET status = 'active' WHERE sector = 'health'`);
    }
  });
});

describe('names and limits', () => {
  it('describe_context names each connection as the person did, with its provider and sector', async () => {
    const context = json(await call('describe_context', {})) as { connections: Array<Record<string, unknown>> };
    expect(context.connections.map(({ display_name, provider, sector }) => ({ display_name, provider, sector }))).toEqual([
      { display_name: 'Demo finance', provider: 'demo', sector: 'finance' },
      { display_name: 'Demo finance (second source)', provider: 'demo', sector: 'finance' },
      { display_name: 'Demo health', provider: 'demo', sector: 'health' },
      { display_name: 'Wearable', provider: 'whoop', sector: 'health' },
      { display_name: 'Demo phone', provider: 'health-auto-export', sector: 'health' },
      { display_name: 'Demo home', provider: 'demo', sector: 'home' },
      { display_name: 'Hub', provider: 'home-assistant', sector: 'home' },
    ]);
  });

  it('a limit above the maximum is lowered and the page says so', async () => {
    const page = json(await call('query', { object: 'finance.transaction', select: ['amount'], limit: 1000 }));
    expect(page).toMatchObject({
      row_count: 200,
      has_more: true,
      limit_lowered_to: 200,
      limit_notice: 'limit 1000 is above the maximum of 200, so it was lowered to 200; has_more: true and next_cursor give the rest.',
    });
    expect(page).not.toHaveProperty('cut_for_size');
  });

  it('the instructions and get_schema\'s own description both suggest asking get_schema per sector', async () => {
    const perSector = 'get_schema for every granted sector is long: ask it with a sector, e.g. {"sector": "finance"}, for the sectors your question needs.';
    expect(agent.getInstructions()).toContain(perSector);
    const { tools } = await agent.listTools();
    expect(tools.find((tool) => tool.name === 'get_schema')?.description).toContain(perSector);
  });
});

describe('health across sources', () => {
  type Night = { id: string; connection_id: string; source_id: string; start_at: string; end_at: string; score: number | null; asleep_s: number | null; score_pending: boolean; duplicate_of: string | null; also_reported_by: string[] };
  const overlaps = (a: { start_at: string; end_at: string }, b: { start_at: string; end_at: string }) => Date.parse(a.start_at) < Date.parse(b.end_at) && Date.parse(a.end_at) > Date.parse(b.start_at);
  let demoHealth: string;
  beforeAll(async () => {
    const context = json(await call('describe_context', {})) as { connections: Array<{ id: string; display_name: string }> };
    demoHealth = context.connections.find((connection) => connection.display_name === 'Demo health')?.id as string;
  });

  it('a night the wearable has not scored yet is score_pending: true, with the note saying what that means', async () => {
    const schema = json(await call('get_schema', { sector: 'health' })) as { objects: Array<{ name: string; notes: string[]; fields: Array<{ name: string }> }> };
    const sleep = schema.objects.find((object) => object.name === 'health.sleep_session');
    expect(sleep?.notes).toContain(
      'score_pending true: the wearable has reported the night but not scored it yet; its score, durations and stages are null for now, which never means no sleep. Read it again after the next sync.',
    );
    const { rows } = json(await call('query', { object: 'health.sleep_session', where: [{ field: 'connection_id', op: 'eq', value: wearable }], limit: 1 })) as { rows: Night[] };
    expect(rows[0]).toMatchObject({ source_id: pendingNight.id, score_pending: true, score: null, asleep_s: null, in_bed_s: null });
    const { rows: scored } = json(await call('query', { object: 'health.sleep_session', where: [{ field: 'source_id', op: 'eq', value: scoredNight.id }] })) as { rows: Night[] };
    expect(scored[0]).toMatchObject({ score_pending: false, score: 91 });
  });

  it('one night reported by two sources is marked on each row with the other sources, by the documented rule', async () => {
    const schema = json(await call('get_schema', { sector: 'health' })) as { objects: Array<{ name: string; notes: string[]; fields: Array<{ name: string; description: string }> }> };
    const sleep = schema.objects.find((object) => object.name === 'health.sleep_session');
    expect(sleep?.fields.find((fieldDef) => fieldDef.name === 'also_reported_by')?.description).toBe(
      "Connection ids (as describe_context lists them) of the other sources that report this night: a row of another connection whose [start_at, end_at) overlaps this one's. Empty when this source alone reports it.",
    );
    expect(sleep?.notes).toContain(
      'Which source to count: time asleep, in bed and stages from one row per night (duplicate_of is_null true; also_reported_by names the other sources); score only from the wearable (WHOOP), the one source that scores nights.',
    );
    const { rows } = json(await call('query', { object: 'health.sleep_session', where: [{ field: 'start_at', op: 'overlaps', value: [phoneNight.start_at, phoneNight.end_at] }], order_by: [{ field: 'connection_id', direction: 'asc' }] })) as { rows: Night[] };
    const phoneRow = rows.find((row) => row.connection_id === phone);
    const wearableRow = rows.find((row) => row.source_id === scoredNight.id);
    // The demo seed's own nights are a third source; which of them overlap is worked out from the seed.
    const demoNights = healthData(NOW.getTime()).sleep as Array<{ start_at: string; end_at: string }>;
    const withDemo = (night: { start_at: string; end_at: string }) => (demoNights.some((demo) => overlaps(demo, night)) ? [demoHealth] : []);
    expect(phoneRow?.also_reported_by).toEqual([...withDemo(phoneNight), wearable].sort());
    expect(wearableRow?.also_reported_by).toEqual([...withDemo({ start_at: wearableRow?.start_at ?? '', end_at: wearableRow?.end_at ?? '' }), phone].sort());
    // The pending night, which no other connection of ours reports but the seed may, lists at most the seed.
    const { rows: pending } = json(await call('query', { object: 'health.sleep_session', where: [{ field: 'source_id', op: 'eq', value: pendingNight.id }] })) as { rows: Night[] };
    expect(pending[0]?.also_reported_by).toEqual(withDemo({ start_at: pendingNight.start, end_at: pendingNight.end }));
    // The phone's row counts only when no earlier connection reports the night.
    expect(phoneRow?.duplicate_of).not.toBeNull();
  });

  it('a sample two sources report for the same metric is marked; another metric over the same hour is not', async () => {
    const hour = { start_at: '2026-11-18T07:00:00.000Z', end_at: '2026-11-18T08:00:00.000Z' };
    await upsertRecords(testEnv.db, { object: 'health.sample', connectionId: wearable, source: 'whoop', records: [{ source_id: 'w-rhr', metric: 'resting_heart_rate', value: 52, unit: 'count/min', ...hour }] });
    await upsertRecords(testEnv.db, {
      object: 'health.sample',
      connectionId: phone,
      source: 'health-auto-export',
      records: [
        { source_id: 'p-rhr', metric: 'resting_heart_rate', value: 54, unit: 'count/min', start_at: '2026-11-18T07:30:00.000Z', end_at: '2026-11-18T07:31:00.000Z' },
        { source_id: 'p-odd', metric: 'walking_asymmetry', value: 2, unit: '%', ...hour },
      ],
    });
    const { rows } = json(await call('query', { object: 'health.sample', where: [{ field: 'source_id', op: 'in', value: ['w-rhr', 'p-rhr', 'p-odd'] }], select: ['source_id', 'also_reported_by'], order_by: [{ field: 'source_id', direction: 'asc' }] })) as { rows: Array<{ source_id: string; also_reported_by: string[] }> };
    // The seed's own samples of these metrics over that hour, worked out from the seed.
    const seedSamples = healthData(NOW.getTime()).samples as Array<{ metric: string; start_at: string; end_at: string }>;
    const seeded = (metric: string, span: { start_at: string; end_at: string }) => (seedSamples.some((sample) => sample.metric === metric && overlaps(sample, span)) ? [demoHealth] : []);
    expect(rows.map(({ source_id, also_reported_by }) => [source_id, also_reported_by])).toEqual([
      ['p-odd', seeded('walking_asymmetry', hour)],
      ['p-rhr', [...seeded('resting_heart_rate', { start_at: '2026-11-18T07:30:00.000Z', end_at: '2026-11-18T07:31:00.000Z' }), wearable].sort()],
      ['w-rhr', [...seeded('resting_heart_rate', hour), phone].sort()],
    ]);
  });
});
