import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { INGEST_PATH_PREFIX } from './routes/ingest.ts';

/**
 * Longest path parameter the router passes on (fastify's default is 100). Above every route's own
 * limit (the mirror's record id: 512), so a route's schema answers, after its key check, rather than
 * the router's 414 before it.
 */
export const MAX_PATH_PARAM_LENGTH = 1024;

/**
 * fastify's `frameworkErrors`: the answers given before any route is found, in the Console's
 * `{ error, code }` shape and without echoing the URL. A push whose URL does not decode is refused like
 * every other malformed id (spec 7: 401 `{"error":"unauthorized"}`, with its deny row).
 */
export function answerFrameworkErrors(deps: { refuseUndecodablePush?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply }) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    switch (error.code) {
      case 'FST_ERR_BAD_URL':
        if (deps.refuseUndecodablePush && request.method === 'POST' && request.url.startsWith(INGEST_PATH_PREFIX)) return deps.refuseUndecodablePush(request, reply);
        return reply.code(400).send({ error: 'the URL does not decode: a percent sign must start a valid UTF-8 escape', code: 'bad_url' });
      case 'FST_ERR_MAX_PARAM_LENGTH':
        return reply.code(414).send({ error: `a path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters`, code: 'uri_too_long' });
      default:
        request.log.error({ err: error }, 'request failed before routing');
        return reply.code(500).send({ error: 'internal error', code: 'internal' });
    }
  };
}
