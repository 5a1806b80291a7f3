import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { LiveRequester } from '../live/index.ts';
import { ValidationError } from './reads-errors.ts';

export const ACTION_TARGET_RULES = {
  notOffered: (id: string, name: string, offering: readonly string[]) =>
    `connection_id: connection ${id} does not offer ${name}; connections that do: ${offering.join(', ')}`,
  ambiguous: (name: string, offering: readonly string[]) =>
    `${name} is offered by more than one connection (${offering.join(', ')}); pass connection_id (describe_context lists the connections)`,
  unknownEntity: (entities: readonly string[], connections: readonly string[]) =>
    `unknown entity ${entities.map((entity) => `'${entity}'`).join(', ')}: neither the cache nor a live check of ${connections.length > 1 ? 'the connections' : 'connection'} ${connections.join(', ')} knows it; ` +
    'find valid ones with query on home.entity (fields entity_id, friendly_name, domain) or with fetch_live on home.entity',
} as const;

/** The entity ids an action's arguments name (`entity_id` as one id or a list); other arguments are the source's business. */
export function entityIdsOf(args: Record<string, unknown>): string[] {
  const value = args.entity_id;
  const ids = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
  return [...new Set(ids)].slice(0, 100);
}

/**
 * The entities of `ids` that connection's source does not know. The cache answers first; an entity it
 * lacks may simply be new (it reaches the cache at the next sync), so the source is asked live before it
 * is called unknown. A live check that fails cannot tell, and does not refuse the action.
 */
async function unknownEntities(db: DatabasePool, live: LiveRequester, connectionId: string, ids: readonly string[]): Promise<string[]> {
  const cached = await db.anyFirst(sql.type(z.object({ entity_id: z.string() }))`
    SELECT entity_id FROM home_entities WHERE connection_id = ${connectionId}::uuid AND entity_id = ANY(${sql.array([...ids], 'text')})`);
  const missing = ids.filter((id) => !cached.includes(id));
  const checks = await Promise.all(
    missing.map((id) =>
      live.fetchLive({ connectionId, object: 'home.entity', id }).then(
        (answer) => answer.rows.length > 0,
        () => true,
      ),
    ),
  );
  return missing.filter((_, i) => !checks[i]);
}

/**
 * The connection that performs an action: the one named by `connection_id` (which must offer it), the only
 * one that offers it, or, among several, the only one that knows the entities named. Home actions naming
 * an entity that neither the cache nor the source knows are refused with how to find valid ones.
 */
export async function chooseActionConnection(
  db: DatabasePool,
  live: LiveRequester,
  request: { name: string; sector: string; args: Record<string, unknown>; connectionId?: string; offering: readonly string[] },
): Promise<string> {
  const { name, offering, connectionId } = request;
  const entities = request.sector === 'home' ? entityIdsOf(request.args) : [];
  if (connectionId !== undefined && !offering.includes(connectionId)) throw new ValidationError(ACTION_TARGET_RULES.notOffered(connectionId, name, offering));
  const candidates = connectionId !== undefined ? [connectionId] : [...offering];
  if (entities.length === 0) {
    if (candidates.length > 1) throw new ValidationError(ACTION_TARGET_RULES.ambiguous(name, candidates));
    return candidates[0] as string;
  }
  const unknown = await Promise.all(candidates.map((candidate) => unknownEntities(db, live, candidate, entities)));
  const knowing = candidates.filter((_, i) => unknown[i]?.length === 0);
  if (knowing.length === 1) return knowing[0] as string;
  if (knowing.length > 1) throw new ValidationError(ACTION_TARGET_RULES.ambiguous(name, knowing));
  const missing = [...new Set(unknown.flat())];
  throw new ValidationError(ACTION_TARGET_RULES.unknownEntity(missing, candidates));
}
