import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent, AuditRecorder } from '../audit/index.ts';
import { UpstreamError } from '../errors/index.ts';
import type { LiveFetchRequest, LiveRequester } from '../live/index.ts';
import { createQueryEngine } from '../query/index.ts';
import { sql } from 'slonik';
import { createCapturingLogger, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { LIVE_REASONS, unknownLiveConnection } from './live-reads.ts';
import { createReadService, type ReadService } from './reads-service.ts';
import type { Caller } from './reads-types.ts';

// Issue 20, fetch_live per connection: every live-capable connection is asked and answers with its rows
// or its own error; one that cannot be read live is skipped with the true reason; connection_id asks one.
const testEnv = useTestEnvironment();
const events: AuditEvent[] = [];
const asked: string[] = [];
let reads: ReadService;
let hub: string;
let brokenHub: string;
let seeded: string;
const NOW = new Date('2026-11-22T12:00:00.000Z');
const caller: Caller = { kind: 'agent', grant: { agentId: 1, agentName: 'claude', sectors: ['home', 'finance', 'mail'], expiresAt: null, generation: 0 }, requestId: 'req-1' };
const lastEvent = () => events.at(-1);

beforeAll(async () => {
  const live = {
    async fetchLive(request: Omit<LiveFetchRequest, 'kind'>) {
      asked.push(request.connectionId);
      if (request.connectionId === brokenHub) throw new UpstreamError('the source did not answer before the request timed out');
      return { rows: [{ entity_id: 'light.living_room', state: 'on' }] };
    },
    invokeAction: async () => ({ ok: false, error: 'not in this test' }),
  } satisfies LiveRequester;
  reads = createReadService({ db: testEnv.db, engine: createQueryEngine({ db: testEnv.db, direct: testEnv.direct }), audit: { record: (event) => void events.push(event) } satisfies AuditRecorder, log: createCapturingLogger().log, serviceName: 'pcg-test', live, now: () => NOW });
  seeded = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'demo' });
  hub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
  brokenHub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
});
beforeEach(() => {
  asked.length = 0;
});

describe('fetch_live across the connections of a sector', () => {
  it('answers with each connection\'s rows or its own error, and skips one that cannot be read live with the true reason', async () => {
    const result = await reads.fetchLive(caller, { object: 'home.entity', where: [{ field: 'entity_id', op: 'eq', value: 'light.living_room' }] });
    expect(result.rows).toEqual([{ connection_id: hub, entity_id: 'light.living_room', state: 'on' }]);
    expect(result.connections).toEqual([
      { connection_id: seeded, provider: 'demo', status: 'skipped', reason: LIVE_REASONS.noConnector('demo') },
      { connection_id: hub, provider: 'home-assistant', status: 'answered', row_count: 1 },
      { connection_id: brokenHub, provider: 'home-assistant', status: 'failed', error: 'the source did not answer before the request timed out' },
    ]);
    expect(LIVE_REASONS.noConnector('demo')).not.toMatch(/push/);
    expect(asked.sort()).toEqual([hub, brokenHub].sort());
    expect(lastEvent()).toMatchObject({ tool: 'fetch_live', sector: 'home', decision: 'allow', outcome: 'ok', resultCount: 1 });
  });

  it('asks only the connection named by connection_id', async () => {
    const result = await reads.fetchLive(caller, { object: 'home.entity', connection_id: hub });
    expect(asked).toEqual([hub]);
    expect(result.connections).toEqual([{ connection_id: hub, provider: 'home-assistant', status: 'answered', row_count: 1 }]);
  });

  it('makes a named connection\'s failure the call\'s, with its message', async () => {
    await expect(reads.fetchLive(caller, { object: 'home.entity', connection_id: brokenHub })).rejects.toThrow('the source did not answer before the request timed out');
    expect(lastEvent()).toMatchObject({ tool: 'fetch_live', decision: 'allow', outcome: 'error' });
  });

  it('refuses a named connection that cannot be read live, saying why, without asking anything', async () => {
    await expect(reads.fetchLive(caller, { object: 'home.entity', connection_id: seeded })).rejects.toThrow(
      `home.entity cannot be read live from connection ${seeded}: Test home (demo): ${LIVE_REASONS.noConnector('demo')}. Query the cache instead: query {"object": "home.entity"} reads the stored rows; data age: Test home never synced (data_age_seconds in describe_context).`,
    );
    expect(asked).toEqual([]);
  });

  it('refuses a connection id that is not an active connection of the sector, listing the ones that are', async () => {
    const other = '00000000-0000-4000-8000-000000000001';
    await expect(reads.fetchLive(caller, { object: 'home.entity', connection_id: other })).rejects.toThrow(unknownLiveConnection(other, 'home', [seeded, hub, brokenHub]).message);
    await expect(reads.fetchLive(caller, { object: 'home.entity', connection_id: 'hub' })).rejects.toThrow('connection_id: expected a connection id as describe_context lists it');
    expect(asked).toEqual([]);
  });
});

describe('fetch_live where no connection can be read live (issue 34)', () => {
  it('is a tool error naming each connection\'s reason and what to do instead, with the data age, and asks nothing', async () => {
    const bank = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid', displayName: 'Checking at the bank' });
    const bridge = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'simplefin', displayName: 'Card' });
    await testEnv.db.query(sql.unsafe`UPDATE connections SET last_synced_at = '2026-11-22T11:00:00Z' WHERE id = ${bank}`);
    try {
      await expect(reads.fetchLive(caller, { object: 'finance.account' })).rejects.toThrow(
        'finance.account cannot be read live from any active connection: ' +
          'Checking at the bank (plaid): Bank aggregator (Plaid) is not read live by this gateway: its connector stores finance.account on a schedule and cannot ask the source on demand; ' +
          'Card (simplefin): Bank-link bridge (SimpleFIN) is not read live by this gateway: its connector stores finance.account on a schedule and cannot ask the source on demand. ' +
          'Query the cache instead: query {"object": "finance.account"} reads the stored rows; data age: Checking at the bank 3600 s old, Card never synced (data_age_seconds in describe_context).',
      );
      expect(asked).toEqual([]);
      expect(lastEvent()).toMatchObject({ tool: 'fetch_live', sector: 'finance', decision: 'allow', outcome: 'error', resultCount: 0 });
    } finally {
      await testEnv.db.query(sql.unsafe`DELETE FROM connections WHERE id IN (${bank}, ${bridge})`);
    }
  });

  it('keeps spec 7 first: a sector with no active connection is refused with its text, audited as before', async () => {
    await expect(reads.fetchLive(caller, { object: 'mail.message' })).rejects.toThrow(/^no active connection for sector 'mail'$/);
    expect(asked).toEqual([]);
    expect(lastEvent()).toMatchObject({ tool: 'fetch_live', sector: 'mail', decision: 'allow', outcome: 'error', resultCount: 0 });
  });
});
