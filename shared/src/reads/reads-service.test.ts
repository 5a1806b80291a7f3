import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent, AuditRecorder } from '../audit/index.ts';
import { upsertRecords } from '../cache/index.ts';
import type { Grant } from '../grants/index.ts';
import { createQueryEngine, localDate, type QueryEngine } from '../query/index.ts';
import { createTimeZoneQueries, machineTimeZone } from '../settings/index.ts';
import { createCapturingLogger, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { ValidationError } from './reads-errors.ts';
import { KNOWN_VALUES_CAP } from './known-values.ts';
import { createReadService, QUERY_BODY_EXPECTED, type ReadService } from './reads-service.ts';
import type { Caller } from './reads-types.ts';

const testEnv = useTestEnvironment();
const events: AuditEvent[] = [];
const recorder = { record: (event: AuditEvent) => void events.push(event) } satisfies AuditRecorder;
let reads: ReadService;
let engineCalls = 0;

const NOW = new Date('2026-11-22T12:00:00.000Z');
const grant = (sectors: Grant['sectors'], expiresAt: string | null = null): Caller => ({
  kind: 'agent',
  grant: { agentId: 1, agentName: 'claude', sectors, expiresAt, generation: 0 },
  requestId: 'req-1',
});
const lastEvent = () => events.at(-1);
const outcomeOf = async (promise: Promise<unknown>) => promise.then((value) => ({ value }), (error: Error) => ({ error: error.message }));

beforeAll(async () => {
  const real = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const counting: QueryEngine = {
    query: (...args) => ((engineCalls += 1), real.query(...args)),
    getRecord: (...args) => ((engineCalls += 1), real.getRecord(...args)),
  };
  reads = createReadService({ db: testEnv.db, engine: counting, audit: recorder, log: createCapturingLogger().log, serviceName: 'pcg-test', now: () => NOW });
  const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await testEnv.db.query(
    (await import('slonik')).sql.unsafe`UPDATE connections SET last_synced_at = '2026-11-22T11:00:00Z' WHERE id = ${bank}`,
  );
  await upsertRecords(testEnv.db, {
    object: 'finance.account',
    connectionId: bank,
    source: 'plaid',
    records: [{ source_id: 'a1', name: 'Checking', consent_expires_at: '2027-02-01T00:00:00Z' }],
  });
  await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId: bank, source: 'plaid', records: [{ source_id: 't1', amount: '-5.00', pending: false }] });
  await insertTestConnection(testEnv.db, { sector: 'mail', provider: 'gmail' });
});

describe('describe_context', () => {
  it('returns sectors: [] and no connections for an empty grant (spec 5 rule 2)', async () => {
    const result = await reads.describeContext(grant([]));
    const zone = machineTimeZone();
    expect(result).toEqual({ service: 'pcg-test', sectors: [], connections: [], now: NOW.toISOString(), time_zone: zone, time_zone_source: 'machine', today: localDate(NOW, zone) });
    expect(lastEvent()).toMatchObject({ tool: 'describe_context', decision: 'allow', outcome: 'ok', sector: null, agentId: 'claude' });
  });

  it('lists only connections of granted sectors, with data age, health and finance consent expiry', async () => {
    const result = await reads.describeContext(grant(['finance']));
    expect(result.sectors).toEqual(['finance']);
    expect(result.connections).toHaveLength(1);
    expect(result.connections[0]).toMatchObject({
      sector: 'finance',
      provider: 'plaid',
      status: 'active',
      data_age_seconds: 3600,
      health: 'ok',
      consent_expires_at: '2027-02-01T00:00:00.000Z',
    });
  });

  it('names each connection as the person named it, with its provider and sector (issue 34)', async () => {
    const result = await reads.describeContext(grant(['finance', 'mail']));
    expect(result.connections.map(({ display_name, provider, sector }) => ({ display_name, provider, sector }))).toEqual([
      { display_name: 'Test finance', provider: 'plaid', sector: 'finance' },
      { display_name: 'Test mail', provider: 'gmail', sector: 'mail' },
    ]);
  });
});

describe('the person\'s time zone (issue 20)', () => {
  it('is shown by describe_context and get_schema, and relative dates resolve in it', async () => {
    const zones = createTimeZoneQueries(testEnv.db);
    await zones.write('Pacific/Auckland');
    try {
      // 12:00Z on 22 November is already the 23rd in Auckland (UTC+13).
      expect(await reads.describeContext(grant(['finance']))).toMatchObject({ time_zone: 'Pacific/Auckland', time_zone_source: 'setting', today: '2026-11-23' });
      const schema = (await reads.getSchema(grant(['finance']), {})) as { conventions?: Record<string, unknown> };
      expect(schema.conventions).toMatchObject({ time_zone: 'Pacific/Auckland', relative_dates: expect.arrayContaining(['last_month', 'last_N_days']), buckets: ['day', 'week', 'month'] });
      const today = await reads.query(grant(['finance']), { object: 'finance.transaction', where: [{ field: 'posted_on', op: 'eq', value: 'today' }] });
      expect(today.resolved_dates).toEqual([{ where: 'where.0', field: 'posted_on', relative: 'today', from: '2026-11-23', to: '2026-11-23', time_zone: 'Pacific/Auckland' }]);
    } finally {
      await zones.write(null);
    }
  });
});

describe('the default of the person\'s time zone (issue 20)', () => {
  it('is the zone a connected hub reports, then the saved setting wins over it, and a hub that goes takes its zone with it', async () => {
    const { sql } = await import('slonik');
    const hub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
    const zones = createTimeZoneQueries(testEnv.db);
    try {
      await testEnv.db.query(sql.unsafe`UPDATE connections SET source_time_zone = 'Pacific/Kiritimati', last_synced_at = now() WHERE id = ${hub}`);
      // 12:00Z on 22 November is already 02:00 on the 23rd at UTC+14.
      expect(await reads.describeContext(grant(['finance']))).toMatchObject({ time_zone: 'Pacific/Kiritimati', time_zone_source: 'hub', today: '2026-11-23' });
      await zones.write('America/Denver');
      expect(await reads.describeContext(grant([]))).toMatchObject({ time_zone: 'America/Denver', time_zone_source: 'setting' });
      await zones.write(null);
      // A stored zone this runtime does not know is passed over, never a failed read.
      await testEnv.db.query(sql.unsafe`UPDATE connections SET source_time_zone = 'Mars/Olympus_Mons' WHERE id = ${hub}`);
      expect(await reads.describeContext(grant([]))).toMatchObject({ time_zone: machineTimeZone(), time_zone_source: 'machine' });
      await testEnv.db.query(sql.unsafe`UPDATE connections SET source_time_zone = 'Asia/Tokyo' WHERE id = ${hub}`);
      expect(await reads.describeContext(grant([]))).toMatchObject({ time_zone: 'Asia/Tokyo', time_zone_source: 'hub' });
    } finally {
      await zones.write(null);
      await testEnv.db.query(sql.unsafe`DELETE FROM connections WHERE id = ${hub}`);
    }
    expect(await reads.describeContext(grant([]))).toMatchObject({ time_zone: machineTimeZone(), time_zone_source: 'machine' });
  });
});

describe('sector checks before any SQL', () => {
  it.each([
    ['query', (caller: Caller) => reads.query(caller, { object: 'mail.message' })],
    ['get_record', (caller: Caller) => reads.getRecord(caller, { object: 'mail.message', id: 'x' })],
    ['fetch_live', (caller: Caller) => reads.fetchLive(caller, { object: 'mail.message' })],
  ])('%s on an ungranted sector is denied with a reason and never reaches the engine', async (tool, call) => {
    const before = engineCalls;
    const { error } = (await outcomeOf(call(grant(['finance'])))) as { error: string };
    expect(error).toBe("access denied: sector 'mail' is not granted to this agent (granted: finance)");
    expect(engineCalls).toBe(before);
    expect(lastEvent()).toMatchObject({ tool, decision: 'deny', denyReason: 'sector not granted', sector: 'mail', outcome: 'error' });
  });

  it('refuses an object whose first word is not a sector, keeping the sector column null', async () => {
    const { error } = (await outcomeOf(reads.query(grant(['finance']), { object: 'financial.transaction' }))) as { error: string };
    expect(error).toMatch(/'financial' is not a sector/);
    expect(lastEvent()).toMatchObject({ decision: 'deny', denyReason: 'unknown sector', sector: null });
  });

  it('refuses a first word that is not a sector and names the granted objects, the likeliest first (spec 5 rule 3, issue 34)', async () => {
    const before = engineCalls;
    const { error } = (await outcomeOf(reads.query(grant(['finance', 'home']), { object: 'transactions' }))) as { error: string };
    expect(error).toBe(
      "access denied: 'transactions' is not a sector; the sectors are finance, health, mail, contacts, calendar, home; the objects you may read: finance.account, finance.transaction, finance.holding, home.entity; did you mean 'finance.transaction'?",
    );
    expect(engineCalls).toBe(before);
    expect(lastEvent()).toMatchObject({ tool: 'query', decision: 'deny', denyReason: 'unknown sector', sector: null, outcome: 'error' });
    // Never an object of an ungranted sector, and no guess when nothing granted is close.
    const { error: far } = (await outcomeOf(reads.getRecord(grant(['home']), { object: 'mails.message', id: 'x' }))) as { error: string };
    expect(far).toBe("access denied: 'mails' is not a sector; the sectors are finance, health, mail, contacts, calendar, home; the objects you may read: home.entity");
    const { error: none } = (await outcomeOf(reads.fetchLive(grant([]), { object: 'transactions' }))) as { error: string };
    expect(none).toBe("access denied: 'transactions' is not a sector; the sectors are finance, health, mail, contacts, calendar, home");
    const { error: sector } = (await outcomeOf(reads.getSchema(grant(['finance']), { sector: 'finanse' }))) as { error: string };
    expect(sector).toBe("access denied: 'finanse' is not a sector; the sectors are finance, health, mail, contacts, calendar, home; did you mean 'finance'?");
    expect(lastEvent()).toMatchObject({ tool: 'get_schema', decision: 'deny', denyReason: 'unknown sector', sector: null });
  });

  it('refuses every call once the key has expired, checked on each call', async () => {
    const { error } = (await outcomeOf(reads.query(grant(['finance'], '2026-11-22T11:59:59.999Z'), { object: 'finance.transaction' }))) as { error: string };
    expect(error).toBe('access denied: expired');
    expect(lastEvent()).toMatchObject({ decision: 'deny', denyReason: 'expired' });
  });

  it('treats a stored * grant like any grant once resolved (all six sectors)', async () => {
    const result = await reads.query(grant(['finance', 'health', 'mail', 'contacts', 'calendar', 'home']), { object: 'mail.message' });
    expect(result.rows).toEqual([]);
  });
});

describe('query and get_record', () => {
  it('answers a granted query and records allow with the row count', async () => {
    const result = await reads.query(grant(['finance']), { object: 'finance.transaction', select: ['amount'] });
    expect(result.rows).toMatchObject([{ amount: '-5.00' }]);
    expect(lastEvent()).toMatchObject({ tool: 'query', decision: 'allow', outcome: 'ok', sector: 'finance', resultCount: 1, requestId: 'req-1' });
    expect(lastEvent()?.args).toEqual({ object: 'finance.transaction', select: ['amount'] });
  });

  it('answers a granted sector with no source as an empty result, not an error', async () => {
    expect((await reads.query(grant(['health']), { object: 'health.workout' })).rows).toEqual([]);
  });

  it('records a bad query as allow with outcome error, and names the problem', async () => {
    const { error } = (await outcomeOf(reads.query(grant(['finance']), { object: 'finance.transaction', where: [{ field: 'nope', op: 'eq', value: 1 }] }))) as { error: string };
    expect(error).toMatch(/unknown field 'nope'/);
    expect(lastEvent()).toMatchObject({ decision: 'allow', outcome: 'error', sector: 'finance' });
  });

  it.each([
    ['a date Postgres refuses', { field: 'posted_on', op: 'eq', value: '2026-02-30' }, 'where.0.value: posted_on is date'],
    ['an instant past year 9999', { field: 'synced_at', op: 'gt', value: '10000-01-01' }, 'where.0.value: synced_at is timestamp'],
    ['an unpaired surrogate', { field: 'description', op: 'eq', value: '\ud800' }, 'where.0.value: description is string'],
  ])('refuses %s as a ValidationError naming the field, never "try again later" (issue 12 item 2)', async (_label, filter, message) => {
    const error = await reads.query(grant(['finance']), { object: 'finance.transaction', where: [filter] }).then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain(message);
    expect(lastEvent()).toMatchObject({ tool: 'query', decision: 'allow', outcome: 'error', sector: 'finance' });
  });

  it.each([undefined, null, [], 'finance.transaction'])('refuses a query input of %j with the shape to send (issue 12 item 9)', async (input) => {
    await expect(reads.query(grant(['finance']), input)).rejects.toThrow(new ValidationError(QUERY_BODY_EXPECTED));
  });

  it('lists the sector\'s objects when the object is unknown', async () => {
    const { error } = (await outcomeOf(reads.query(grant(['finance']), { object: 'finance.loans' }))) as { error: string };
    expect(error).toBe("unknown object 'finance.loans'; objects in finance: finance.account, finance.transaction, finance.holding");
    const { error: typo } = (await outcomeOf(reads.getRecord(grant(['finance']), { object: 'finance.transactions', id: 'x' }))) as { error: string };
    expect(typo).toBe("unknown object 'finance.transactions'; objects in finance: finance.account, finance.transaction, finance.holding; did you mean 'finance.transaction'?");
  });

  it('gets a record by id, and says record not found for an unknown one', async () => {
    const [row] = (await reads.query(grant(['finance']), { object: 'finance.transaction' })).rows;
    const found = await reads.getRecord(grant(['finance']), { object: 'finance.transaction', id: row?.id });
    expect(found).toMatchObject({ object: 'finance.transaction', record: { id: row?.id, amount: '-5.00' } });
    const { error } = (await outcomeOf(reads.getRecord(grant(['finance']), { object: 'finance.transaction', id: 'missing' }))) as { error: string };
    expect(error.startsWith('record not found')).toBe(true);
    expect(error).toBe(
      'record not found: no record of finance.transaction has the id \'missing\'. Ids are the id field of query rows (query {"object": "finance.transaction", "select": ["id"]}); source_id is the provider\'s own id, not a gateway id.',
    );
    const { error: bare } = (await outcomeOf(reads.getRecord(grant(['finance']), { object: 'finance', id: 'missing' }))) as { error: string };
    expect(bare).toMatch(/^record not found: no record of any finance object has the id 'missing'\. Ids are the id field of query rows \(query \{"object": "finance\.<object>"/);
  });
});

describe('get_schema', () => {
  it('leaves objects of ungranted sectors out instead of refusing', async () => {
    const all = await reads.getSchema(grant(['finance', 'home']), {});
    expect(all.objects.map((object) => (object as { name: string }).name)).toEqual(['finance.account', 'finance.transaction', 'finance.holding', 'home.entity']);
    expect((await reads.getSchema(grant(['finance']), { sector: 'mail' })).objects).toEqual([]);
    const [first] = (await reads.getSchema(grant(['finance']), { sector: 'finance' })).objects as Array<Record<string, unknown>>;
    expect(first).toHaveProperty('notes');
    expect(first).toHaveProperty('fieldDocs');
  });
});

describe('fetch_live', () => {
  it('says no active connection for a granted sector without one', async () => {
    const { error } = (await outcomeOf(reads.fetchLive(grant(['home']), { object: 'home.entity' }))) as { error: string };
    expect(error).toBe("no active connection for sector 'home'");
    expect(lastEvent()).toMatchObject({ tool: 'fetch_live', decision: 'allow', outcome: 'error', sector: 'home' });
  });
});

describe('the operator', () => {
  it('reads every sector and leaves no audit row for reads', async () => {
    const count = events.length;
    const context = await reads.describeContext({ kind: 'operator' });
    expect(context.sectors).toEqual(['finance', 'health', 'mail', 'contacts', 'calendar', 'home']);
    await reads.query({ kind: 'operator' }, { object: 'mail.message' });
    expect(events.length).toBe(count);
  });

  it('is recorded for fetch_live, a Console act', async () => {
    await outcomeOf(reads.fetchLive({ kind: 'operator' }, { object: 'home.entity' }));
    expect(lastEvent()).toMatchObject({ agentId: 'operator', tool: 'fetch_live' });
  });
});

describe('get_record by sector', () => {
  it('finds a record when given only its sector, as the mirror route does', async () => {
    const [row] = (await reads.query(grant(['finance']), { object: 'finance.transaction' })).rows;
    const found = await reads.getRecord(grant(['finance']), { object: 'finance', id: row?.id });
    expect(found.object).toBe('finance.transaction');
    const { error } = (await outcomeOf(reads.getRecord(grant(['mail']), { object: 'finance', id: row?.id }))) as { error: string };
    expect(error).toMatch(/sector 'finance' is not granted/);
  });
});

// Last: these add transactions and accounts that the tests above do not expect.
describe('discoverable values (issue 20)', () => {
  it('lists the values the cache holds for categorical fields, most frequent first, and none for other fields', async () => {
    const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
    const categories = ['groceries', 'groceries', 'dining', 'groceries', 'dining', 'travel'];
    await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId: bank, source: 'plaid', records: categories.map((category, i) => ({ source_id: `k${i}`, amount: '-1.00', provider_category: category, currency: 'EUR', pending: false })) });
    const { objects } = (await reads.getSchema(grant(['finance']), { sector: 'finance' })) as { objects: Array<{ name: string; fields: Array<Record<string, unknown>> }> };
    const fields = objects.find((object) => object.name === 'finance.transaction')?.fields ?? [];
    const field = (name: string) => fields.find((candidate) => candidate.name === name);
    expect(field('category')?.known_values).toEqual(['groceries', 'dining', 'travel']);
    expect(field('currency')?.known_values).toEqual(['EUR']);
    expect(field('description')).not.toHaveProperty('known_values');
  });

  it('caps the list and says so', async () => {
    const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
    await upsertRecords(testEnv.db, { object: 'finance.account', connectionId: bank, source: 'plaid', records: Array.from({ length: KNOWN_VALUES_CAP + 5 }, (_, i) => ({ source_id: `acct${i}`, subtype: `kind-${String(i).padStart(2, '0')}` })) });
    const { objects } = (await reads.getSchema(grant(['finance']), { sector: 'finance' })) as { objects: Array<{ name: string; fields: Array<Record<string, unknown>> }> };
    const subtype = objects.find((object) => object.name === 'finance.account')?.fields.find((candidate) => candidate.name === 'subtype');
    expect(subtype?.known_values).toHaveLength(KNOWN_VALUES_CAP);
    expect(subtype?.known_values_capped).toBe(true);
  });
});
