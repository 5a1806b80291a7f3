import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import type { AuditEvent, AuditRecorder } from '../audit/index.ts';
import type { ActionResult, LiveRequester } from '../live/index.ts';
import { SECTORS, type Sector } from '../sectors/index.ts';
import { createCapturingLogger, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createActionsService, type ActionsService } from './actions-service.ts';
import type { Caller } from './reads-types.ts';

/**
 * Spec 1 item 8: only `home` has an action catalogue; the five other sectors are read-only. With every
 * sector granted and an active connection in each, nothing is offered outside home and an action named
 * in a read-only sector is refused before any source is asked.
 */
const testEnv = useTestEnvironment();
const events: AuditEvent[] = [];
const invoked: string[] = [];
let actions: ActionsService;
let hub: string;
const READ_ONLY = SECTORS.filter((sector) => sector !== 'home');
const caller: Caller = { kind: 'agent', grant: { agentId: 1, agentName: 'claude', sectors: [...SECTORS], expiresAt: null, generation: 0 }, requestId: 'req-1' };
const LIGHT = { name: 'home.light.turn_on', sector: 'home', description: 'Turn a light on', input_schema: { type: 'object' } };
/** An action row a finance connection should never hold; written directly, past any connector. */
const TRANSFER = { name: 'finance.transfer.send', sector: 'finance', description: 'Send money', input_schema: { type: 'object' } };

beforeAll(async () => {
  const live = {
    fetchLive: async () => {
      throw new Error('no live reads in this test');
    },
    invokeAction: async (request): Promise<ActionResult> => {
      invoked.push(request.name);
      return { ok: true, result: null };
    },
  } satisfies LiveRequester;
  actions = createActionsService({ db: testEnv.db, audit: { record: (event) => void events.push(event) } satisfies AuditRecorder, log: createCapturingLogger().log, live });
  for (const sector of READ_ONLY) {
    const connection = await insertTestConnection(testEnv.db, { sector });
    if (sector === 'finance') await testEnv.db.query(sql.unsafe`UPDATE connections SET actions = ${sql.jsonb([TRANSFER])} WHERE id = ${connection}::uuid`);
  }
  hub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
  // A hub's catalogue as its sync stores it: the control that shows the service does read actions.
  await testEnv.db.query(sql.unsafe`UPDATE connections SET actions = ${sql.jsonb([LIGHT])} WHERE id = ${hub}::uuid`);
});

describe('actions on read-only sectors (spec 1 item 8)', () => {
  it('offers only home actions, with every sector granted and connected', async () => {
    expect((await actions.listActions(caller, {})).actions.map((action) => action.name)).toEqual([LIGHT.name]);
    for (const sector of READ_ONLY) expect((await actions.listActions(caller, { sector })).actions, sector).toEqual([]);
  });

  it.each(READ_ONLY)('refuses an action named in %s without asking the source, and records it', async (sector: Sector) => {
    const before = events.length;
    await expect(actions.invokeAction(caller, { name: `${sector}.x.y` })).rejects.toThrow(`unknown action '${sector}.x.y'; list_actions shows the actions ${sector} offers`);
    expect(invoked).not.toContain(`${sector}.x.y`);
    expect(events.slice(before)).toEqual([expect.objectContaining({ tool: 'invoke_action', sector, decision: 'allow', outcome: 'error', resultCount: 0 })]);
  });

  it('neither lists nor performs an action stored on a finance connection: the service keeps the rule, not the connectors', async () => {
    expect((await actions.listActions(caller, {})).actions.map((action) => action.name)).not.toContain(TRANSFER.name);
    expect((await actions.listActions(caller, { sector: 'finance' })).actions).toEqual([]);
    await expect(actions.invokeAction(caller, { name: TRANSFER.name, arguments: {} })).rejects.toThrow(`unknown action '${TRANSFER.name}'`);
    expect(invoked).not.toContain(TRANSFER.name);
  });

  it('still performs an offered home action (the control)', async () => {
    expect(await actions.invokeAction(caller, { name: LIGHT.name, arguments: {} })).toEqual({ ok: true, result: null, connection_id: hub });
    expect(invoked).toEqual([LIGHT.name]);
  });
});

describe('errors that name the way on (issue 34)', () => {
  it('an unknown action in a granted sector names the actions it offers, the closest first', async () => {
    const before = events.length;
    await expect(actions.invokeAction(caller, { name: 'home.light.turn_onn' })).rejects.toThrow(
      "unknown action 'home.light.turn_onn'; list_actions shows the actions home offers: home.light.turn_on; did you mean 'home.light.turn_on'?",
    );
    expect(invoked).not.toContain('home.light.turn_onn');
    expect(events.slice(before)).toEqual([expect.objectContaining({ tool: 'invoke_action', sector: 'home', decision: 'allow', outcome: 'error' })]);
  });

  it('an action named without its sector is refused as spec 5 rule 3 says, and the message shows the form', async () => {
    const before = events.length;
    await expect(actions.invokeAction(caller, { name: 'light.turn_on' })).rejects.toThrow(
      "access denied: 'light' is not a sector; the sectors are finance, health, mail, contacts, calendar, home; action names start with their sector (<sector>.<domain>.<service>) and list_actions names them; did you mean 'home.light.turn_on'?",
    );
    expect(invoked).not.toContain('light.turn_on');
    expect(events.slice(before)).toEqual([expect.objectContaining({ tool: 'invoke_action', sector: null, decision: 'deny', denyReason: 'unknown sector' })]);
  });
});
