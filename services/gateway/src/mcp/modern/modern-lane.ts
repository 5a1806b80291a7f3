import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '@pcg/shared/logger';
import { JSONRPC_ERRORS, keyRefusalText, STORE_RETRY_AFTER_SECONDS } from '../jsonrpc-errors.ts';
import type { McpServerDeps } from '../mcp-server-factory.ts';
import type { McpRouteDeps } from '../mcp-routes.ts';
import { createModernMethods, type ModernAnswer } from './modern-methods.ts';
import { isPlainObject } from '../plain-object.ts';
import { envelopeOf, META_KEYS, MODERN_PROTOCOL_VERSION, standardHeaderMismatch, SUPPORTED_VERSIONS } from './modern-protocol.ts';

/** Seconds a client told `Too many sessions` on the modern lane waits: requests end quickly, unlike sessions. */
export const MODERN_RETRY_AFTER_SECONDS = 1;

export type ModernLaneDeps = Pick<McpRouteDeps, 'resolveAuthorization' | 'challenge' | 'onInitializeRefused'> & {
  server: McpServerDeps;
  /** Modern requests answered at once; past it, the 512-session cap's answer (design 8.1). */
  maxInFlight: number;
  log: Logger;
};

type Id = string | number | null;

function idOf(body: unknown): Id {
  const id = isPlainObject(body) ? body.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function errorBody(error: { code: number; message: string; data?: unknown }, id: Id) {
  return { jsonrpc: '2.0' as const, id, error: error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data } };
}

/**
 * The modern lane of `/mcp` (design 8.1): one POST, one answer, no session. The key is resolved and its
 * deadline checked on every request; a refused key gets exactly what a refused `initialize` gets (status,
 * code, message, `data`, challenge, and its row through the same capped throttle); then the envelope, the
 * mirrored headers and the version are checked as revision 2026-07-28 says, and the method is answered.
 */
export function createModernLane(deps: ModernLaneDeps) {
  const { log } = deps;
  const methods = createModernMethods(deps.server);
  let inFlight = 0;

  const send = (reply: FastifyReply, status: number, body: unknown) => reply.code(status).header('content-type', 'application/json').send(body);
  const fail = (reply: FastifyReply, error: { status: number; code: number; message: string; data?: unknown }, id: Id) => send(reply, error.status, errorBody(error, id));

  /** 401 -32001 as a refused initialize gets it (spec 7), the refusal's text in `data` and the bridge's challenge. */
  function unauthorized(reply: FastifyReply, id: Id, refusedText?: string) {
    const challenge = deps.challenge(refusedText);
    if (challenge) reply.header('www-authenticate', challenge);
    return fail(reply, { ...JSONRPC_ERRORS.unauthorized, data: refusedText }, id);
  }

  /** The SSE answer of `subscriptions/listen`: the acknowledgment first, then the graceful end (nothing will ever change). */
  function listen(reply: FastifyReply, id: Id, acknowledged: Record<string, unknown>) {
    const subscription = { [META_KEYS.subscriptionId]: id };
    const events = [
      { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: subscription, notifications: acknowledged } },
      { jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { ...methods.serverMeta, ...subscription } } },
    ];
    return reply
      .code(200)
      .headers({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' })
      .send(events.map((event) => `event: message\ndata: ${JSON.stringify(event)}\n\n`).join(''));
  }

  function deliver(reply: FastifyReply, id: Id, answer: ModernAnswer) {
    if (answer.kind === 'error') return fail(reply, answer, id);
    if (answer.kind === 'listen') return listen(reply, id, answer.acknowledged);
    return send(reply, 200, { jsonrpc: '2.0', id, result: answer.result });
  }

  async function serve(request: FastifyRequest, reply: FastifyReply) {
    const body = request.body;
    const id = idOf(body);
    if (!isPlainObject(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string' || ('id' in body && id === null)) {
      return fail(reply, JSONRPC_ERRORS.invalidRequest, id);
    }
    let resolved;
    try {
      resolved = await deps.resolveAuthorization(request.headers.authorization);
    } catch (error) {
      log.warn({ err: error }, 'grant store unavailable on /mcp');
      reply.header('retry-after', String(STORE_RETRY_AFTER_SECONDS));
      return fail(reply, JSONRPC_ERRORS.storeUnavailable, id);
    }
    if (!resolved.ok) {
      const refusedText = resolved.reason === 'missing' ? undefined : keyRefusalText(resolved.reason);
      deps.onInitializeRefused({ denyReason: refusedText ?? 'missing', keyPresented: resolved.reason !== 'missing' });
      return unauthorized(reply, id, refusedText);
    }
    if (inFlight >= deps.maxInFlight) {
      reply.header('retry-after', String(MODERN_RETRY_AFTER_SECONDS));
      return fail(reply, JSONRPC_ERRORS.tooManySessions, id);
    }
    inFlight += 1;
    reply.raw.once('close', () => (inFlight -= 1));
    // The revision defines no client notification over HTTP: one that carries a key is taken and dropped.
    if (!('id' in body)) return reply.code(202).send();

    const envelope = envelopeOf(body);
    if ('issue' in envelope) return fail(reply, { ...JSONRPC_ERRORS.invalidParams, message: `${JSONRPC_ERRORS.invalidParams.message}: ${envelope.issue}` }, id);
    const mismatch = standardHeaderMismatch(request.headers, body, envelope);
    if (mismatch !== undefined) return fail(reply, { ...JSONRPC_ERRORS.headerMismatch, message: `${JSONRPC_ERRORS.headerMismatch.message}: ${mismatch}` }, id);
    if (envelope.protocolVersion !== MODERN_PROTOCOL_VERSION) {
      return fail(reply, { ...JSONRPC_ERRORS.unsupportedProtocolVersion, data: { supported: [...SUPPORTED_VERSIONS], requested: envelope.protocolVersion } }, id);
    }
    const params = isPlainObject(body.params) ? body.params : {};
    const answer = await methods.answer({ id: id ?? 0, method: body.method, params, headers: request.headers, grant: resolved.grant });
    return deliver(reply, id, answer);
  }

  return {
    serve,
    /** Modern requests being answered now. */
    get inFlight() {
      return inFlight;
    },
  };
}

export type ModernLane = ReturnType<typeof createModernLane>;
