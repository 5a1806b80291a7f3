import type { DatabasePool } from 'slonik';
import { z } from 'zod';
import type { AuditRecorder } from '../audit/index.ts';
import { listConnectionActions, type ActionDef, type ActionResult, type LiveRequester } from '../live/index.ts';
import type { Logger } from '../logger/index.ts';
import { describeZodError } from '../query/index.ts';
import type { Sector } from '../sectors/index.ts';
import { createCallGuard, grantedSectors } from './call-guard.ts';
import { noActiveConnection, unknownAction, UpstreamError, ValidationError } from './reads-errors.ts';
import { activeConnectionIds } from './reads-queries.ts';
import { chooseActionConnection } from './action-target.ts';
import type { Caller } from './reads-types.ts';
import { offersActions } from '../sectors/index.ts';

export const ListActionsInputSchema = z
  .object({ sector: z.string().max(64).optional().describe('Only this sector\'s actions; default every granted sector.') })
  .strict();

export const InvokeActionInputSchema = z
  .object({
    name: z.string().min(1).max(256).describe('The action, <sector>.<domain>.<service>, as list_actions names it (e.g. home.light.turn_on).'),
    arguments: z.record(z.string(), z.unknown()).optional().describe("The action's arguments, as its input_schema describes."),
    connection_id: z
      .uuid({ error: 'expected a connection id as describe_context lists it' })
      .optional()
      .describe('The connection that should act, when more than one offers the action (ids in describe_context); the answer names the one that acted.'),
  })
  .strict();

/** An action's answer, with the connection that performed it. */
export type InvokeActionResult = ActionResult & { connection_id: string };

/**
 * The actions of the active connections in the given sectors whose names start with their own sector.
 * Only a sector with an action catalogue (spec 1 item 8: home) offers any, whatever a connection row
 * of another sector holds: the rule is the service's, not each connector's to keep.
 */
async function offeredActions(db: DatabasePool, sectors: readonly Sector[]): Promise<Array<ActionDef & { connectionId: string }>> {
  const acting = sectors.filter(offersActions);
  return (await listConnectionActions(db, acting)).filter((action) => acting.some((sector) => action.name.startsWith(`${sector}.`)));
}

export type ActionsServiceDeps = { db: DatabasePool; audit: AuditRecorder; log: Logger; live?: LiveRequester; now?: () => Date };

/**
 * list_actions and invoke_action (design 4.3). The action name's first word decides the grant check;
 * a name whose first word is not a sector is refused, never mapped onto a granted sector (spec 5
 * rule 3). Actions are never retried; a source's own rejection comes back as `{ok: false, error}`.
 */
export function createActionsService(deps: ActionsServiceDeps) {
  const { audited, checkSector } = createCallGuard(deps);

  return {
    listActions(caller: Caller, input: unknown): Promise<{ actions: ActionDef[] }> {
      return audited(caller, 'list_actions', input ?? {}, () => {
        const sector = (input as { sector?: unknown } | null)?.sector;
        return typeof sector === 'string' ? checkSector(caller, sector, 'sector') : null;
      }, async (sector) => {
        const parsed = ListActionsInputSchema.safeParse(input ?? {});
        if (!parsed.success) throw new ValidationError(describeZodError(parsed.error));
        const sectors = sector === null ? grantedSectors(caller) : [sector as Sector];
        const seen = new Set<string>();
        const actions = (await offeredActions(deps.db, sectors))
          .filter((action) => !seen.has(action.name) && seen.add(action.name))
          .map(({ connectionId: _connectionId, ...action }) => action);
        return { result: { actions }, count: actions.length };
      }) as Promise<{ actions: ActionDef[] }>;
    },

    invokeAction(caller: Caller, input: unknown): Promise<InvokeActionResult> {
      return audited(caller, 'invoke_action', input, () => {
        const name = (input as { name?: unknown } | null)?.name;
        if (typeof name !== 'string') return null;
        return checkSector(caller, name, 'action');
      }, async (sector) => {
        const parsed = InvokeActionInputSchema.safeParse(input);
        if (!parsed.success || sector === null) throw new ValidationError(parsed.success ? 'name: give the action to perform' : describeZodError(parsed.error));
        const { name, arguments: args = {}, connection_id: connectionId } = parsed.data;
        if ((await activeConnectionIds(deps.db, sector as Sector)).length === 0) throw noActiveConnection(sector);
        const offered = await offeredActions(deps.db, [sector as Sector]);
        const offering = offered.filter((action) => action.name === name).map((action) => action.connectionId);
        if (offering.length === 0) throw unknownAction(name, sector, offered.map((action) => action.name));
        if (!deps.live) throw new UpstreamError('actions are not available: the sync-worker is not connected');
        const target = await chooseActionConnection(deps.db, deps.live, { name, sector, args, connectionId, offering: [...new Set(offering)] });
        const result: InvokeActionResult = { ...(await deps.live.invokeAction({ connectionId: target, name, arguments: args })), connection_id: target };
        return { result, count: result.ok ? 1 : 0, outcome: result.ok ? 'ok' : 'error' };
      }) as Promise<InvokeActionResult>;
    },
  };
}

export type ActionsService = ReturnType<typeof createActionsService>;
