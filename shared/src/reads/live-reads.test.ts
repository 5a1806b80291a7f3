import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent, AuditRecorder } from '../audit/index.ts';
import { UpstreamError } from '../http/index.ts';
import type { LiveFetchRequest, LiveRequester } from '../live/index.ts';
import { createQueryEngine } from '../query/index.ts';
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
const caller: Caller = { kind: 'agent', grant: { agentId: 1, agentName: 'claude', sectors: ['home'], expiresAt: null, generation: 0 }, requestId: 'req-1' };
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
  reads = createReadService({ db: testEnv.db, engine: createQueryEngine({ db: testEnv.db }), audit: { record: (event) => void events.push(event) } satisfies AuditRecorder, log: createCapturingLogger().log, serviceName: 'pcg-test', live });
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
    await expect(reads.fetchLive(caller, { object: 'home.entity', connection_id: seeded })).rejects.toThrow(`home.entity cannot be read live from connection ${seeded}: ${LIVE_REASONS.noConnector('demo')}`);
    expect(asked).toEqual([]);
  });

  it('refuses a connection id that is not an active connection of the sector, listing the ones that are', async () => {
    const other = '00000000-0000-4000-8000-000000000001';
    await expect(reads.fetchLive(caller, { object: 'home.entity', connection_id: other })).rejects.toThrow(unknownLiveConnection(other, 'home', [seeded, hub, brokenHub]).message);
    await expect(reads.fetchLive(caller, { object: 'home.entity', connection_id: 'hub' })).rejects.toThrow('connection_id: expected a connection id as describe_context lists it');
    expect(asked).toEqual([]);
  });
});
