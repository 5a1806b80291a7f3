import type { FastifyError, FastifyInstance } from 'fastify';
import { createHttpApp, dataExceptionState, describeDataException } from '@pcg/shared/http';
import type { Logger } from '@pcg/shared/logger';
import { JSONRPC_ERRORS, jsonRpcErrorBody } from './mcp/jsonrpc-errors.ts';

/**
 * Fastify loads its default schema compilers (Ajv and fast-json-stringify, each with its own copy of Ajv:
 * some 175 modules) when it is created, for routes that declare a JSON schema. No route of this port
 * declares one: requests are checked with zod where they are handled. Giving fastify these instead keeps
 * that code out of the gateway's memory (issue 38); a route that declared a schema would fail to register.
 */
const NO_SCHEMA_COMPILERS = {
  buildValidator: () => {
    throw new Error('the agent port has no JSON schema validator: check the request with zod in its handler');
  },
  buildSerializer: () => {
    throw new Error('the agent port has no JSON schema serializer: answer with a plain object');
  },
};

/**
 * The agent port's fastify instance. Every answer here is JSON-RPC shaped, errors included, because
 * MCP clients parse whatever comes back from this port; nothing answers a protocol question with 5xx.
 */
export function buildApp({ log, trustedProxies = [] }: { log: Logger; trustedProxies?: readonly string[] }): FastifyInstance {
  // `request.ip` believes X-Forwarded-For only from these proxies (spec 8: the bridge rate limiter's key).
  const app = createHttpApp(log, {
    bodyLimit: 1024 * 1024,
    trustProxy: trustedProxies.length > 0 ? [...trustedProxies] : false,
    // No child logger per request: building one (bindings serialized through redaction) showed in the
    // profile of every tool call, and this port logs almost nothing per request.
    childLoggerFactory: (logger) => logger,
    // Node answers an HTTP/1.1 request without Host with a bare 400 before any route runs; the agent port's
    // Host check (design 7.3) answers it instead, with its JSON-RPC 403 `Forbidden host`.
    http: { requireHostHeader: false },
    schemaController: { compilersFactory: NO_SCHEMA_COMPILERS },
  });

  app.setNotFoundHandler((_request, reply) => {
    const answer = JSONRPC_ERRORS.notFound;
    return reply.code(answer.status).send(jsonRpcErrorBody(answer));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A path no route serves is 404 -32601 whatever its body was (fastify parses bodies before routing
    // reaches the not-found handler).
    if (request.routeOptions.url === undefined) {
      return reply.code(JSONRPC_ERRORS.notFound.status).send(jsonRpcErrorBody(JSONRPC_ERRORS.notFound));
    }
    // A Postgres data exception (SQLSTATE class 22) is a value a schema should have refused: a bad input
    // naming the field where the request shows it, never a 5xx. Logged, since a schema missed it.
    const sqlState = dataExceptionState(error);
    if (sqlState !== null) {
      request.log.warn({ sqlState, route: request.routeOptions.url }, 'data exception answered as a bad request');
      const answer = JSONRPC_ERRORS.invalidParams;
      return reply.code(answer.status).send(jsonRpcErrorBody({ code: answer.code, message: `${answer.message}: ${describeDataException(request)}` }));
    }
    const status = typeof error.statusCode === 'number' && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    // -32700 for bodies fastify could not parse; -32600 for other request errors; 5xx never carries internal text.
    const code = error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError ? -32700 : status >= 500 ? -32603 : -32600;
    const message = status >= 500 ? 'Internal error' : error.message;
    return reply.code(status).send(jsonRpcErrorBody({ code, message }));
  });

  return app;
}
