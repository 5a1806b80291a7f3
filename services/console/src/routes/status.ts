import type { FastifyInstance } from 'fastify';
import type { DatabasePool } from 'slonik';
import { readAuditDrops, readAuditQueueDepth } from '@pcg/shared/audit';
import { connectionHealth, createConnectionQueries } from '@pcg/shared/connections';
import type { Logger } from '@pcg/shared/logger';
import { openQueue, type QueueName } from '@pcg/shared/queues';
import type { Redis, RedisSettings } from '@pcg/shared/redis';
import { readPublishedProcesses } from '@pcg/shared/metrics';
import { MCP_NOT_SERVED, readHeartbeat, readPart, readRedisPart, type Dependency, type PartResult } from '@pcg/shared/status';
import { processStates, recentFailedSyncJobs } from '../status/status-parts.ts';
import { judgeStatus } from '../status/status-verdict.ts';

/** What a part the status page could not read says instead of its value. */
export const statusPartDown = (dependency: Dependency) => ({ unavailable: `${dependency} is unreachable` });

/**
 * GET /api/status (design 4.4): whether MCP is being served, queue depths, the last sync of every
 * connection and the audit rows dropped. Behind the Host check; reading it is not recorded.
 * It answers even while Redis or Postgres is down, which is when an operator needs it most: each part
 * is read on its own, `dependencies` says which store is down, a part that needs it says it is
 * unavailable, and the status is 503 until every dependency answers again (so a monitor sees the fault).
 */
export function registerStatusRoute(
  app: FastifyInstance,
  deps: { db: DatabasePool; redis: Redis; settings: RedisSettings; log: Logger; chain?: { last(): { intact: boolean; verifiedAt: string } | undefined } },
): void {
  const queues = new Map<QueueName, ReturnType<typeof openQueue>>();
  const queue = (name: QueueName) => {
    let opened = queues.get(name);
    if (!opened) {
      opened = openQueue(deps.settings, name, deps.log, `${name}-status`);
      // A queue that could not be opened (Redis away) is opened again next time.
      opened.catch(() => queues.delete(name));
      queues.set(name, opened);
    }
    return opened;
  };
  app.addHook('onClose', async () => {
    for (const opened of queues.values()) await (await opened.catch(() => undefined))?.close();
  });

  const depth = (name: QueueName) => readRedisPart(deps.redis, async () => (await queue(name)).getJobCounts('waiting', 'active', 'delayed', 'failed'));
  const value = <T>(part: PartResult<T>) => (part.ok ? part.value : statusPartDown(part.down));

  app.get('/api/status', async (_request, reply) => {
    const now = Date.now();
    const [heartbeat, sync, live, queued, dropped, connections, published] = await Promise.all([
      readRedisPart(deps.redis, () => readHeartbeat(deps.redis)),
      depth('sync'),
      depth('live'),
      readRedisPart(deps.redis, () => readAuditQueueDepth(deps.redis)),
      readPart('postgres', () => readAuditDrops(deps.db)),
      readPart('postgres', async () =>
        (await createConnectionQueries(deps.db).list()).map(({ id, sector, provider, display_name, status, last_synced_at, last_error }) => ({
          id,
          sector,
          provider,
          display_name,
          status,
          health: connectionHealth({ status, last_synced_at, last_error }, Date.now()),
          last_synced_at,
          last_error,
        })),
      ),
      readRedisPart(deps.redis, () => readPublishedProcesses(deps.redis, now)),
    ]);
    const names = new Map(connections.ok ? connections.value.map((connection) => [connection.id, connection.display_name] as const) : []);
    const failedJobs = await readRedisPart(deps.redis, async () => recentFailedSyncJobs(await queue('sync'), names, now));
    const parts = [heartbeat, sync, live, queued, dropped, connections, published, failedJobs];
    const down = new Set(parts.flatMap((part) => (part.ok ? [] : [part.down])));
    const dependencies = { postgres: down.has('postgres') ? 'down' : 'up', redis: down.has('redis') ? 'down' : 'up' };
    if (down.size > 0) deps.log.warn({ dependencies }, 'status read with a dependency down');
    reply.code(down.size > 0 ? 503 : 200);
    const processes = published.ok ? processStates(published.value, now) : [];
    const last = deps.chain?.last();
    const chain = last ? { intact: last.intact, verifiedAt: last.verifiedAt } : null;
    const verdict = judgeStatus({
      dependencies: dependencies as { postgres: 'up' | 'down'; redis: 'up' | 'down' },
      mcpServed: heartbeat.ok ? heartbeat.value !== null : null,
      connections: connections.ok ? connections.value : null,
      failedJobs: failedJobs.ok ? failedJobs.value : null,
      droppedRows: dropped.ok ? Object.values(dropped.value).reduce((sum, rows) => sum + rows, 0) : null,
      chain,
      processes,
    });
    return {
      // Issue 39's additions; spec 4's fields below keep their shapes.
      overall: verdict,
      processes,
      failedJobs: value(failedJobs),
      chain,
      dependencies,
      mcp: !heartbeat.ok
        ? { served: null, ...statusPartDown(heartbeat.down) }
        : heartbeat.value
          ? { served: true, address: heartbeat.value.address, sessions: heartbeat.value.sessions, lastSeenAt: heartbeat.value.at }
          : { served: false, message: MCP_NOT_SERVED },
      queues: { sync: value(sync), live: value(live) },
      connections: value(connections),
      audit: { queued: value(queued), dropped: value(dropped) },
    };
  });
}
