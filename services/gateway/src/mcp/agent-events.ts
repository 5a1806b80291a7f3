import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { agentEventsChannel, parseAgentEvent } from '@pcg/shared/grants';
import type { Logger } from '@pcg/shared/logger';
import { createRedis, type RedisSettings } from '@pcg/shared/redis';
import type { SessionRegistry } from './session-registry.ts';

const LiveAgentRow = z.object({ name: z.string(), generation: z.number(), dead: z.boolean() });

/**
 * Ends sessions whose grant no longer matches the store: a missing agent, a revoked or expired key,
 * or another generation. One query for every live session.
 */
export async function recheckSessions(db: DatabasePool, registry: SessionRegistry): Promise<number> {
  const live = registry.liveGrants();
  if (live.length === 0) return 0;
  const names = [...new Set(live.map((session) => session.agentName))];
  const rows = await db.any(sql.type(LiveAgentRow)`
    SELECT name, generation, (revoked_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= now())) AS dead
    FROM agents WHERE user_id = 1 AND name = ANY(${sql.array(names, 'text')})`);
  const current = new Map(rows.map((row) => [row.name, row]));
  const stale = live.filter((session) => {
    const row = current.get(session.agentName);
    return !row || row.dead || row.generation !== session.generation;
  });
  await Promise.all(stale.map((session) => registry.end(session.id, 'grant changed while events were missed')));
  return stale.length;
}

/**
 * Listens on `<prefix>agent-events` with a dedicated subscriber connection and ends an agent's live
 * sessions on every grant change (design 4.7). After each reconnect it re-checks every live session,
 * so a message missed while Redis was away never leaves a revoked session alive.
 */
export async function listenForAgentEvents(deps: { settings: RedisSettings; db: DatabasePool; registry: SessionRegistry; log: Logger }) {
  const channel = agentEventsChannel(deps.settings);
  const subscriber = createRedis(deps.settings, 'subscriber', 'gateway-agent-events');
  let connectedBefore = false;
  subscriber.on('error', (error: Error) => deps.log.warn({ err: error }, 'agent events connection error'));
  subscriber.on('ready', () => {
    if (connectedBefore) {
      recheckSessions(deps.db, deps.registry).then(
        (ended) => deps.log.info({ ended }, 'rechecked live sessions after a Redis reconnect'),
        (error: unknown) => deps.log.error({ err: error }, 'recheck of live sessions failed'),
      );
    }
    connectedBefore = true;
  });
  subscriber.on('message', (_channel: string, message: string) => {
    const event = parseAgentEvent(message);
    if (!event) {
      deps.log.warn('ignored a malformed agent event');
      return;
    }
    void deps.registry.endAgent(event.agent, `agent ${event.kind}`);
  });
  await subscriber.subscribe(channel);
  return {
    async close() {
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
