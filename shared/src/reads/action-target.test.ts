import { sql } from 'slonik';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent, AuditRecorder } from '../audit/index.ts';
import { upsertRecords } from '../cache/index.ts';
import type { ActionInvokeRequest, LiveFetchRequest, LiveRequester } from '../live/index.ts';
import { createCapturingLogger, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { ACTION_TARGET_RULES } from './action-target.ts';
import { createActionsService, type ActionsService } from './actions-service.ts';
import type { Caller } from './reads-types.ts';

// Issue 20: invoke_action names the connection that acted, takes connection_id when more than one offers
// the action, and refuses an entity that neither the cache nor a live check of the source knows.
const testEnv = useTestEnvironment();
const events: AuditEvent[] = [];
const invoked: Array<Omit<ActionInvokeRequest, 'kind'>> = [];
const liveChecks: string[] = [];
let actions: ActionsService;
let upstairs: string;
let downstairs: string;
const caller: Caller = { kind: 'agent', grant: { agentId: 1, agentName: 'claude', sectors: ['home'], expiresAt: null, generation: 0 }, requestId: 'req-1' };
const LIGHT = { name: 'home.light.turn_on', sector: 'home', description: 'Turn a light on', input_schema: { type: 'object' } };
/** Known to the downstairs hub but not yet in the cache (it reaches the cache at the next sync). */
const NEW_LIGHT = 'light.new_lamp';

beforeAll(async () => {
  const live = {
    async fetchLive(request: Omit<LiveFetchRequest, 'kind'>) {
      liveChecks.push(`${request.connectionId}:${request.id}`);
      return { rows: request.connectionId === downstairs && request.id === NEW_LIGHT ? [{ entity_id: NEW_LIGHT, state: 'off' }] : [] };
    },
    async invokeAction(request: Omit<ActionInvokeRequest, 'kind'>) {
      invoked.push(request);
      return { ok: true as const, result: { changed: [] } };
    },
  } satisfies LiveRequester;
  actions = createActionsService({ db: testEnv.db, audit: { record: (event) => void events.push(event) } satisfies AuditRecorder, log: createCapturingLogger().log, live });
  upstairs = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
  downstairs = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
  for (const [hub, entity] of [[upstairs, 'light.bedroom'], [downstairs, 'light.kitchen']] as const) {
    await testEnv.db.query(sql.unsafe`UPDATE connections SET actions = ${sql.jsonb([LIGHT])} WHERE id = ${hub}::uuid`);
    await upsertRecords(testEnv.db, { object: 'home.entity', connectionId: hub, source: 'home-assistant', records: [{ source_id: entity, entity_id: entity, domain: 'light', state: 'off' }] });
  }
});
beforeEach(() => {
  invoked.length = 0;
  liveChecks.length = 0;
});

describe('which connection acts', () => {
  it('is the one whose source knows the entity, and the answer names it', async () => {
    const result = await actions.invokeAction(caller, { name: LIGHT.name, arguments: { entity_id: 'light.kitchen' } });
    expect(result).toEqual({ ok: true, result: { changed: [] }, connection_id: downstairs });
    expect(invoked).toEqual([{ connectionId: downstairs, name: LIGHT.name, arguments: { entity_id: 'light.kitchen' } }]);
  });

  it('checks the sources live before refusing an entity the cache does not have yet', async () => {
    const result = await actions.invokeAction(caller, { name: LIGHT.name, arguments: { entity_id: NEW_LIGHT } });
    expect(result.connection_id).toBe(downstairs);
    expect(liveChecks.sort()).toEqual([`${downstairs}:${NEW_LIGHT}`, `${upstairs}:${NEW_LIGHT}`].sort());
  });

  it('refuses an entity no source knows, naming how to find valid ones, and asks nothing to act', async () => {
    const before = events.length;
    await expect(actions.invokeAction(caller, { name: LIGHT.name, arguments: { entity_id: 'light.nowhere' } })).rejects.toThrow(ACTION_TARGET_RULES.unknownEntity(['light.nowhere'], [upstairs, downstairs]));
    expect(ACTION_TARGET_RULES.unknownEntity(['x'], ['y'])).toMatch(/query on home\.entity .* fetch_live on home\.entity/);
    expect(invoked).toEqual([]);
    expect(events.slice(before)).toEqual([expect.objectContaining({ tool: 'invoke_action', sector: 'home', decision: 'allow', outcome: 'error' })]);
  });

  it('asks for connection_id when several offer an action that names no entity, and takes it', async () => {
    await expect(actions.invokeAction(caller, { name: LIGHT.name, arguments: {} })).rejects.toThrow(ACTION_TARGET_RULES.ambiguous(LIGHT.name, [upstairs, downstairs]));
    expect(invoked).toEqual([]);
    expect(await actions.invokeAction(caller, { name: LIGHT.name, arguments: {}, connection_id: upstairs })).toMatchObject({ ok: true, connection_id: upstairs });
  });

  it('refuses an entity the named connection does not know, even when another one does', async () => {
    await expect(actions.invokeAction(caller, { name: LIGHT.name, arguments: { entity_id: 'light.kitchen' }, connection_id: upstairs })).rejects.toThrow(ACTION_TARGET_RULES.unknownEntity(['light.kitchen'], [upstairs]));
  });

  it('refuses a connection_id that does not offer the action, naming those that do', async () => {
    const stranger = '00000000-0000-4000-8000-000000000002';
    await expect(actions.invokeAction(caller, { name: LIGHT.name, connection_id: stranger })).rejects.toThrow(ACTION_TARGET_RULES.notOffered(stranger, LIGHT.name, [upstairs, downstairs]));
  });
});
