import type { Server } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyHttpOptions, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

/**
 * A fastify instance on the service's own logger. Per-request lines are off: the audit record, not the
 * log, is where calls are counted, and a busy agent port would drown every other line.
 */
export function createHttpApp(
  log: Logger,
  options: Omit<FastifyHttpOptions<Server>, 'logger' | 'loggerInstance' | 'logController'> = {},
): FastifyInstance {
  return Fastify({
    ...options,
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
  });
}
