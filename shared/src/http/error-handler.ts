import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DomainError } from '../errors/index.ts';
import { dataExceptionState, describeDataException } from './data-exception.ts';
import { domainErrorAnswer } from './errors.ts';
import { STORE_DOWN_TEXT, STORE_RETRY_AFTER_SECONDS, unreachableStore } from './store-unavailable.ts';

type ZodIssueLike = { instancePath?: string; message?: string; params?: { issue?: { path?: PropertyKey[] } } };

function describeValidation(error: FastifyError & { validation?: ZodIssueLike[] }): string {
  const context = (error as { validationContext?: string }).validationContext ?? 'request';
  const parts = (error.validation ?? []).map((issue) => {
    const path = issue.instancePath?.replace(/^\//, '').replaceAll('/', '.') || '';
    return path ? `'${path}' ${issue.message ?? 'is invalid'}` : (issue.message ?? 'is invalid');
  });
  return `invalid ${context}: ${parts.join('; ') || error.message}`;
}

/**
 * JSON error answers for the Console port: `{ error, code? }`. A 5xx never carries internal text;
 * validation failures name the field and what is allowed. A Postgres data exception (SQLSTATE class 22)
 * is a bad input that validation missed, so it is a 400 naming the field where the request shows it. A
 * store that does not answer is a 503 with `Retry-After` naming the store, not a 500: nothing is wrong with
 * the request, and the operator learns which store to look at.
 */
export function registerJsonErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof DomainError) {
      const answer = domainErrorAnswer(error);
      return reply.code(answer.status).send(answer.body);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      return reply.code(400).send({ error: describeValidation(error), code: 'validation_failed' });
    }
    const sqlState = dataExceptionState(error);
    if (sqlState !== null) {
      // Logged: each one is an input that a schema should have refused first.
      request.log.warn({ sqlState, route: request.routeOptions.url }, 'data exception answered as a bad request');
      return reply.code(400).send({ error: describeDataException(request), code: 'validation_failed' });
    }
    const store = unreachableStore(error);
    if (store !== null) {
      request.log.warn({ err: error, store }, 'a store did not answer');
      reply.header('retry-after', String(STORE_RETRY_AFTER_SECONDS));
      return reply.code(503).send({ error: STORE_DOWN_TEXT[store], code: 'store_unavailable' });
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status < 500) {
      return reply.code(status).send({ error: error.message, code: error.code ?? 'bad_request' });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ error: 'internal error', code: 'internal' });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'not found', code: 'not_found' }));
}
