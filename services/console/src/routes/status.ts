import type { FastifyInstance } from 'fastify';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { readAuditQueueStatus } from '@pcg/shared/audit';
import type { Logger } from '@pcg/shared/logger';
import { openQueue, type QueueName } from '@pcg/shared/queues';
import type { Redis, RedisSettings } from '@pcg/shared/redis';
import { MCP_NOT_SERVED, readHeartbeat } from '@pcg/shared/status';

const ConnectionStatusRow = z.object({
  id: z.string(),
  sector: z.string(),
  provider: z.string(),
  display_name: z.string(),
  status: z.string(),
  last_synced_at: z.string().nullable(),
  last_error: z.string().nullable(),
});

/**
 * GET /api/status (design 4.4): whether MCP is being served, queue depths, the last sync of every
 * connection and the audit rows dropped. Behind the Host check; reading it is not recorded.
 */
export function registerStatusRoute(app: FastifyInstance, deps: { db: DatabasePool; redis: Redis; settings: RedisSettings; log: Logger }): void {
  const queues = new Map<QueueName, ReturnType<typeof openQueue>>();
  const queue = (name: QueueName) => {
    let opened = queues.get(name);
    if (!opened) {
      opened = openQueue(deps.settings, name, deps.log, `${name}-status`);
      queues.set(name, opened);
    }
    return opened;
  };
  app.addHook('onClose', async () => {
    for (const opened of queues.values()) await (await opened).close();
  });

  const depth = async (name: QueueName) => {
    try {
      return await (await queue(name)).getJobCounts('waiting', 'active', 'delayed', 'failed');
    } catch {
      return null;
    }
  };

  app.get('/api/status', async () => {
    const [heartbeat, sync, live, audit, connections] = await Promise.all([
      readHeartbeat(deps.redis),
      depth('sync'),
      depth('live'),
      readAuditQueueStatus(deps.redis),
      deps.db.any(sql.type(ConnectionStatusRow)`
        SELECT id::text AS id, sector, provider, display_name, status, last_synced_at, last_error
        FROM connections WHERE user_id = 1 ORDER BY sector, created_at, id`),
    ]);
    return {
      mcp: heartbeat
        ? { served: true, address: heartbeat.address, sessions: heartbeat.sessions, lastSeenAt: heartbeat.at }
        : { served: false, message: MCP_NOT_SERVED },
      queues: { sync, live },
      connections,
      audit,
    };
  });
}
