import { hash, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { parseBearer, type Grant, type KeyRefusal } from '@pcg/shared/grants';
import type { Logger } from '@pcg/shared/logger';
import { coalesceWrites } from './coalesced-writes.ts';
import { createInFlightIds, requestIdsOf } from './in-flight-ids.ts';
import {
  GRANT_CHANGED_TEXT,
  JSONRPC_ERRORS,
  jsonRpcErrorBody,
  keyRefusalText,
  STORE_RETRY_AFTER_SECONDS,
  type JsonRpcErrorAnswer,
} from './jsonrpc-errors.ts';
import { createMcpServer, type McpServerDeps } from './mcp-server-factory.ts';
import { invalidParamsOf, envelopeParamsIssueOf, refuseInvalidParams } from './request-validation.ts';
import type { ModernLane } from './modern/modern-lane.ts';
import { declaresModernEra } from './modern/modern-protocol.ts';
import { createSessionEventStore } from './session-event-store.ts';
import type { SessionRegistry } from './session-registry.ts';
import { SessionTransport } from './session-transport.ts';

/** The `retry` hint of SSE responses: how long a client whose stream dropped waits before resuming it. */
export const SSE_RETRY_MS = 1000;

const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A refused initialize, for its audit row: `denyReason` is the exact text the client was given. */
export type InitializeRefusal = { denyReason: string; keyPresented: boolean };

/** A credential on /mcp: an agent key, or a bridge access token standing for the same grant. */
export type CredentialResult =
  | { ok: true; grant: Grant; /** A bridge token's own expiry; null for an agent key. */ validUntil: string | null }
  | { ok: false; reason: 'missing' | KeyRefusal };

export type McpRouteDeps = {
  registry: SessionRegistry;
  server: McpServerDeps;
  /** Throws when the grant store does not answer (answered 503, never 401). */
  resolveAuthorization(header: string | undefined): Promise<CredentialResult>;
  /**
   * The `WWW-Authenticate` value of a 401 while the OAuth bridge is on (spec 5 rule 4), naming why a
   * presented credential was refused; undefined while it is off, when a 401 carries no challenge.
   */
  challenge(refused?: string): string | undefined;
  now?: () => Date;
  /** The agent's generation now, or null when it no longer exists; read again after a session starts. */
  currentGeneration(agentId: number): Promise<number | null>;
  /** Records a refused initialize (through the shared throttle). */
  onInitializeRefused(refusal: InitializeRefusal): void;
  /** The stateless lane for requests that declare revision 2026-07-28 (design 8.1); absent when `MCP_MODERN_ERA=false`. */
  modern?: Pick<ModernLane, 'serve'>;
  log: Logger;
};

function answer(reply: FastifyReply, error: JsonRpcErrorAnswer, id: string | number | null = null) {
  return reply.code(error.status).send(jsonRpcErrorBody(error, id));
}

/** A single request naming `initialize`, whether or not its params are valid (a batch is never one). */
function namesInitialize(body: unknown): body is { method: 'initialize' } {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && (body as { method?: unknown }).method === 'initialize';
}

/** 400 -32602 with the message naming the fields. */
function invalidParams(reply: FastifyReply, message: string, id: string | number | null) {
  return reply.code(JSONRPC_ERRORS.invalidParams.status).send(jsonRpcErrorBody({ code: JSONRPC_ERRORS.invalidParams.code, message }, id));
}

function requestIdOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/**
 * Fastify's JSON parser, except that an empty body parses as no body: a GET or DELETE sent with
 * `Content-Type: application/json` and nothing in it must still get its session answer (404, 400),
 * not a parse error. A POST with no body is answered by the router.
 */
function acceptEmptyJsonBodies(scope: FastifyInstance): void {
  const parseJson = scope.getDefaultJsonParser('error', 'error');
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') {
      done(null, undefined);
      return;
    }
    parseJson(request, typeof body === 'string' ? body : body.toString('utf8'), done);
  });
}

/** The version an initialize negotiates, as the SDK's Server answers it: the client's if supported, else the latest. */
function negotiatedVersion(body: unknown): string {
  const requested = (body as { params?: { protocolVersion?: unknown } }).params?.protocolVersion;
  return typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

/** SHA-256 of the bearer credential, to bind a session to what opened it; '' when there is none. */
function credentialHash(header: string | undefined): string {
  const credential = parseBearer(header);
  // The one-shot hash: a Hash object per request showed in the profile under load.
  return credential.kind === 'token' ? hash('sha256', credential.token, 'hex') : '';
}

/**
 * POST, GET and DELETE /mcp. Every answer that spec 7 fixes is given here, before the session transport
 * sees the request (its own texts differ); the transport only ever gets requests for a live session
 * it owns, or an initialize that has passed the key check and the cap.
 */
export function registerMcpRoutes(app: FastifyInstance, deps: McpRouteDeps): void {
  const { registry, log } = deps;
  const now = deps.now ?? (() => new Date());
  const inFlight = createInFlightIds();

  /** 401 -32001 `Unauthorized` (spec 7); a refusal's exact text goes in `data`, and in the bridge's challenge. */
  function unauthorized(reply: FastifyReply, id: string | number | null, refusedText?: string) {
    const challenge = deps.challenge(refusedText);
    if (challenge) reply.header('www-authenticate', challenge);
    return reply.code(JSONRPC_ERRORS.unauthorized.status).send(jsonRpcErrorBody(JSONRPC_ERRORS.unauthorized, id, refusedText));
  }

  /** 503 with Retry-After while the grant store is down: not a refusal (no row, no 401, no new sign-in). */
  function storeUnavailable(reply: FastifyReply, id: string | number | null, error: unknown) {
    log.warn({ err: error }, 'grant store unavailable on /mcp');
    reply.header('retry-after', String(STORE_RETRY_AFTER_SECONDS));
    return answer(reply, JSONRPC_ERRORS.storeUnavailable, id);
  }

  /** Hands the request to a session's transport; fastify must not touch the reply afterwards. */
  function handOver(request: FastifyRequest, reply: FastifyReply, transport: SessionTransport, body?: unknown) {
    reply.hijack();
    if (request.method === 'POST') coalesceWrites(reply.raw);
    try {
      transport.handle(request.raw, reply.raw, body);
    } catch (error) {
      log.error({ err: error }, 'mcp transport failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify(jsonRpcErrorBody({ code: -32603, message: 'Internal error' })));
      } else {
        reply.raw.destroy();
      }
    }
  }

  /** Resolves a credential; undefined once a 503 has been sent because the store did not answer. */
  async function resolveOrAnswer(reply: FastifyReply, header: string | undefined, id: string | number | null) {
    try {
      return await deps.resolveAuthorization(header);
    } catch (error) {
      storeUnavailable(reply, id, error);
      return undefined;
    }
  }

  /** The refusal text for a session whose grant changed while it started: the key's state now, if refused. */
  async function raceRefusalText(header: string | undefined): Promise<string> {
    const current = await deps.resolveAuthorization(header);
    return current.ok || current.reason === 'missing' ? GRANT_CHANGED_TEXT : keyRefusalText(current.reason);
  }

  async function initialize(request: FastifyRequest, reply: FastifyReply) {
    const header = request.headers.authorization;
    const requestId = requestIdOf(request.body);
    const resolved = await resolveOrAnswer(reply, header, requestId);
    if (!resolved) return reply;
    if (!resolved.ok) {
      const refusedText = resolved.reason === 'missing' ? undefined : keyRefusalText(resolved.reason);
      deps.onInitializeRefused({ denyReason: refusedText ?? 'missing', keyPresented: resolved.reason !== 'missing' });
      return unauthorized(reply, requestId, refusedText);
    }
    // Checked once the key stands, so nothing about the body is told to a caller without one.
    const invalid = invalidParamsOf(request.body as { method: 'initialize' });
    if (invalid !== undefined) return invalidParams(reply, invalid, requestId);
    const grant: Grant = resolved.grant;
    const reservation = registry.reserve(grant.agentName);
    if (!reservation) return answer(reply, JSONRPC_ERRORS.tooManySessions, requestId);

    // The id is chosen here so the session is registered before the transport answers: a key event
    // that dooms the reservation up to that moment refuses the initialize instead of letting a 200 out.
    const sessionId = randomUUID();
    const server = createMcpServer(deps.server, grant);
    // Resumable streams: event ids, a retry hint, and the session's own bounded store for Last-Event-ID.
    const events = createSessionEventStore();
    const protocolVersion = negotiatedVersion(request.body);
    const transport = new SessionTransport({ sessionId, protocolVersion, events, retryMs: SSE_RETRY_MS });
    // Set before connect(): the Protocol wraps an existing onclose, and a later assignment would replace it.
    transport.onclose = () => void registry.end(sessionId, 'transport closed');
    let committed = false;
    try {
      await server.connect(transport);
      refuseInvalidParams(transport, log);
      // A grant change between the key lookup and now refuses the session (design 4.7), as does a key
      // event that arrived meanwhile (the reservation is then doomed and commit refuses).
      const generation = await deps.currentGeneration(grant.agentId);
      committed = generation === grant.generation && reservation.commit({
        id: sessionId,
        grant,
        credentialHash: credentialHash(header),
        credentialValidUntil: resolved.validUntil,
        transport,
        protocolVersion,
        eventIdStatus: (eventId) => events.statusOf(eventId),
        close: () => server.close(),
      });
      if (!committed) {
        const refusedText = await raceRefusalText(header);
        deps.onInitializeRefused({ denyReason: refusedText, keyPresented: true });
        return unauthorized(reply, requestId, refusedText);
      }
      handOver(request, reply, transport, request.body);
      // The transport refused the initialize itself (say, an Accept header without SSE): no session opened.
      if (transport.sessionId === undefined) await registry.end(sessionId, 'initialize not accepted by the transport');
    } catch (error) {
      if (reply.sent || reply.raw.headersSent) throw error;
      return storeUnavailable(reply, requestId, error);
    } finally {
      reservation.release();
      if (!committed) await server.close();
    }
    return reply;
  }

  // Encapsulated, so the lenient JSON parser applies to /mcp only.
  void app.register(async (scope) => {
    acceptEmptyJsonBodies(scope);
    scope.post('/mcp', async (request, reply) => {
      const body = request.body;
      // Design 8.1: the era is decided per request, before anything else; without the mark, all is as before.
      if (deps.modern && declaresModernEra(request.headers, body)) return deps.modern.serve(request, reply);
      // An initialize still carrying a session id starts a new session and leaves the named one alone:
      // clients re-initializing after a 404 often keep the stale header (docs/decisions.md).
      if (namesInitialize(body)) return initialize(request, reply);
      return forSession(request, reply, request.headers['mcp-session-id'], body);
    });
    scope.get('/mcp', async (request, reply) => forSession(request, reply, request.headers['mcp-session-id']));
    scope.delete('/mcp', async (request, reply) => forSession(request, reply, request.headers['mcp-session-id']));
  });

  async function forSession(request: FastifyRequest, reply: FastifyReply, header: string | string[] | undefined, body?: unknown) {
    const requestId = requestIdOf(body);
    if (typeof header !== 'string' || !SESSION_ID.test(header)) return answer(reply, JSONRPC_ERRORS.missingSession, requestId);
    const session = registry.touch(header.toLowerCase());
    if (!session) return answer(reply, JSONRPC_ERRORS.unknownSession, requestId);
    // The credential comes with every request (MCP authorization: the Authorization header on each one).
    const presented = credentialHash(request.headers.authorization);
    if (presented === '') return unauthorized(reply, requestId);
    if (presented !== session.credentialHash) {
      // Another credential on this session: accept it only if it resolves to the same grant (a refreshed
      // bridge token). A refused one gets 401, so the client renews it; another agent is told the session
      // does not exist.
      const resolved = await resolveOrAnswer(reply, request.headers.authorization, requestId);
      if (!resolved) return reply;
      if (!resolved.ok) return unauthorized(reply, requestId, resolved.reason === 'missing' ? undefined : keyRefusalText(resolved.reason));
      if (resolved.grant.agentId !== session.grant.agentId || resolved.grant.generation !== session.grant.generation) {
        return answer(reply, JSONRPC_ERRORS.unknownSession, requestId);
      }
      registry.rebind(session.id, presented, resolved.validUntil);
    } else {
      // A bridge token past its own hour is refused here too, so the client refreshes it.
      const validUntil = session.credentialValidUntil;
      if (validUntil !== null && now().getTime() >= Date.parse(validUntil)) return unauthorized(reply, requestId, keyRefusalText('expired'));
    }
    if (request.method === 'POST') {
      if (body === undefined) return answer(reply, JSONRPC_ERRORS.emptyBody);
      const badParams = envelopeParamsIssueOf(body);
      if (badParams !== undefined) return invalidParams(reply, badParams, requestId);
      if (!inFlight.claim(session.transport, requestIdsOf(body), reply.raw)) return answer(reply, JSONRPC_ERRORS.duplicateRequestId, requestId);
    } else if (request.method === 'GET') {
      const lastEventId = request.headers['last-event-id'];
      if (typeof lastEventId === 'string' && lastEventId !== '' && session.eventIdStatus(lastEventId) === 'expired') return answer(reply, JSONRPC_ERRORS.eventsExpired);
    }
    handOver(request, reply, session.transport, body);
    return reply;
  }
}
