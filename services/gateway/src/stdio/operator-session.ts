import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { z } from 'zod';
import { createAuditProducer, OPERATOR_AGENT_ID } from '@pcg/shared/audit';
import { agentPortConfig, auditConfig, dbConfig, logConfig, redisConfig } from '@pcg/shared/config';
import type { Grant } from '@pcg/shared/grants';
import { openInfrastructure } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';
import { liveConfig } from '@pcg/shared/queues';
import { SECTORS } from '@pcg/shared/sectors';
import { liveRequesterOnFirstUse } from '../live/live-on-first-use.ts';
import { createMcpServer, toolListing } from '../mcp/mcp-server-factory.ts';
import { createToolSet } from '../mcp/tools/tool-set.ts';

export const operatorStdioConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...auditConfig.shape,
  ...liveConfig.shape,
  SERVICE_NAME: agentPortConfig.shape.SERVICE_NAME,
});
export type OperatorStdioConfig = z.output<typeof operatorStdioConfigSchema>;

/**
 * Spec 5: the stdio session resolves as the local operator with every sector. It runs the agent path
 * unchanged (deadline and sector checks, one audit row per call) under this grant, so every call leaves
 * a row with `agent_id` `operator`: an AI client acts through it with every sector. It is no agent's
 * grant: no key resolves to it, and it is never offered on the agent port.
 */
export const OPERATOR_GRANT: Grant = { agentId: 0, agentName: OPERATOR_AGENT_ID, sectors: [...SECTORS], expiresAt: null, generation: 0 };

export type OperatorSession = {
  /** Settles when the client closes the session (stdin ends) and the audit rows are queued. */
  closed: Promise<void>;
  close(): Promise<void>;
};

/**
 * Serves the seven tools over stdio to the operator's own MCP client, which launched this process.
 * Never a network listener; stdout carries the protocol, so logs must go to stderr.
 */
export async function serveOperatorStdio(
  config: OperatorStdioConfig,
  log: Logger,
  io: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
): Promise<OperatorSession> {
  const infra = await openInfrastructure(config, 'operator-stdio', log);
  const live = liveRequesterOnFirstUse(config, log);
  const audit = createAuditProducer({ redis: infra.redis, db: infra.db, source: 'operator-stdio', settings: config, log });
  const tools = createToolSet({ db: infra.db, direct: infra.direct, audit, log, serviceName: config.SERVICE_NAME, live });
  const server = createMcpServer({ serviceName: config.SERVICE_NAME, tools, listing: toolListing(tools), log }, OPERATOR_GRANT);
  // Audit request ids are `<session>:<request id>`; a session id keeps them apart across runs.
  const transport = Object.assign(new StdioServerTransport(io.stdin, io.stdout), { sessionId: randomUUID() });

  const { promise: ended, resolve: end } = Promise.withResolvers<void>();
  server.onclose = () => end();
  io.stdin.once('end', () => void server.close());
  await server.connect(transport);

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await server.close();
      await audit.drain();
      await live.close();
      await infra.close();
    })());
  return { closed: ended.then(close), close };
}
