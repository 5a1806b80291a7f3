import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';

/**
 * A fastify instance on the service's own logger. Per-request lines are off: the audit record, not the
 * log, is where calls are counted, and a busy agent port would drown every other line.
 */
export function createHttpApp(
  log: Logger,
  options: Omit<FastifyServerOptions, 'logger' | 'loggerInstance' | 'logController'> = {},
): FastifyInstance {
  return Fastify({
    ...options,
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
  });
}
