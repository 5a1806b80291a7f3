import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { DomainError } from '@pcg/shared/errors';
import { domainErrorAnswer, STORE_DOWN_TEXT, STORE_RETRY_AFTER_SECONDS, unreachableStore } from '@pcg/shared/http';
import { INGEST_PATH_PREFIX } from './routes/ingest.ts';
import { isMirrorPath } from './routes/mirror.ts';

/**
 * Longest path parameter the router passes on (fastify's default is 100). Above every route's own
 * limit (the mirror's record id: 512), so a route's schema answers, after its key check, rather than
 * the router's 414 before it.
 */
export const MAX_PATH_PARAM_LENGTH = 1024;

/**
 * fastify's `frameworkErrors`: the answers given before any route is found, in the Console's
 * `{ error, code }` shape and without echoing the URL. A push whose URL does not decode is refused like
 * every other malformed id (spec 7: 401 `{"error":"unauthorized"}`, with its deny row). A read-mirror URL
 * that does not decode is answered only once its key stands: spec 5's 401 or 403 comes first.
 */
export function answerFrameworkErrors(deps: {
  refuseUndecodablePush?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply;
  /** The mirror's key check: its refusal, or null when the key stands. */
  mirrorKeyRefusal?: (request: FastifyRequest) => Promise<DomainError | null>;
}) {
  const badUrl = (reply: FastifyReply) => reply.code(400).send({ error: 'the URL does not decode: a percent sign must start a valid UTF-8 escape', code: 'bad_url' });
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    switch (error.code) {
      case 'FST_ERR_BAD_URL':
        if (deps.refuseUndecodablePush && request.method === 'POST' && request.url.startsWith(INGEST_PATH_PREFIX)) return deps.refuseUndecodablePush(request, reply);
        if (deps.mirrorKeyRefusal && isMirrorPath(request.url)) {
          deps.mirrorKeyRefusal(request).then(
            (refusal) => {
              if (!refusal) return badUrl(reply);
              const answer = domainErrorAnswer(refusal);
              return reply.code(answer.status).send(answer.body);
            },
            (failure: unknown) => {
              const store = unreachableStore(failure);
              if (store === null) request.log.error({ err: failure }, 'the mirror key check failed');
              if (store !== null) reply.header('retry-after', String(STORE_RETRY_AFTER_SECONDS));
              return store !== null ? reply.code(503).send({ error: STORE_DOWN_TEXT[store], code: 'store_unavailable' }) : reply.code(500).send({ error: 'internal error', code: 'internal' });
            },
          );
          return reply;
        }
        return badUrl(reply);
      case 'FST_ERR_MAX_PARAM_LENGTH':
        return reply.code(414).send({ error: `a path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters`, code: 'uri_too_long' });
      default:
        request.log.error({ err: error }, 'request failed before routing');
        return reply.code(500).send({ error: 'internal error', code: 'internal' });
    }
  };
}
