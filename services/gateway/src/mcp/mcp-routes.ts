import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { parseBearer, type Grant, type KeyRefusal } from '@pcg/shared/grants';
import type { Logger } from '@pcg/shared/logger';
import { JSONRPC_ERRORS, jsonRpcErrorBody, type JsonRpcErrorAnswer } from './jsonrpc-errors.ts';
import { createMcpServer, type McpServerDeps } from './mcp-server-factory.ts';
import type { SessionRegistry } from './session-registry.ts';

const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type InitializeRefusal = { reason: 'missing' | 'unknown agent' | 'revoked' | 'expired' | 'grant changed'; keyPresented: boolean };

/** A credential on /mcp: an agent key, or a bridge access token standing for the same grant. */
export type CredentialResult =
  | { ok: true; grant: Grant; /** A bridge token's own expiry; null for an agent key. */ validUntil: string | null }
  | { ok: false; reason: 'missing' | KeyRefusal };

export type McpRouteDeps = {
  registry: SessionRegistry;
  server: McpServerDeps;
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
  log: Logger;
};

function answer(reply: FastifyReply, error: JsonRpcErrorAnswer, id: string | number | null = null) {
  return reply.code(error.status).send(jsonRpcErrorBody(error, id));
}

/** Why a presented credential was refused, as the challenge's error_description. */
const refusalText = (reason: KeyRefusal) => `access denied: ${reason}`;

function requestIdOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** SHA-256 of the bearer credential, to bind a session to what opened it; '' when there is none. */
function credentialHash(header: string | undefined): string {
  const credential = parseBearer(header);
  return credential.kind === 'token' ? createHash('sha256').update(credential.token).digest('hex') : '';
}

/**
 * POST, GET and DELETE /mcp. Every answer that spec 7 fixes is given here, before the SDK transport
 * sees the request (its own texts differ); the transport only ever gets requests for a live session
 * it owns, or an initialize that has passed the key check and the cap.
 */
export function registerMcpRoutes(app: FastifyInstance, deps: McpRouteDeps): void {
  const { registry, log } = deps;
  const now = deps.now ?? (() => new Date());

  /** 401 -32001, with the bridge's challenge when it is on. */
  function unauthorized(reply: FastifyReply, id: string | number | null, refused?: KeyRefusal) {
    const challenge = deps.challenge(refused === undefined ? undefined : refusalText(refused));
    if (challenge) reply.header('www-authenticate', challenge);
    return answer(reply, JSONRPC_ERRORS.unauthorized, id);
  }

  /** Hands the request to a transport; fastify must not touch the reply afterwards. */
  async function handOver(request: FastifyRequest, reply: FastifyReply, transport: StreamableHTTPServerTransport, body?: unknown) {
    reply.hijack();
    try {
      await transport.handleRequest(request.raw, reply.raw, body);
    } catch (error) {
      log.error({ err: error }, 'mcp transport failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify(jsonRpcErrorBody({ code: -32603, message: 'Internal error' })));
      } else {
        reply.raw.destroy();
      }
    }
  }

  async function initialize(request: FastifyRequest, reply: FastifyReply) {
    const header = request.headers.authorization;
    const resolved = await deps.resolveAuthorization(header);
    if (!resolved.ok) {
      deps.onInitializeRefused({ reason: resolved.reason, keyPresented: resolved.reason !== 'missing' });
      return unauthorized(reply, requestIdOf(request.body), resolved.reason === 'missing' ? undefined : resolved.reason);
    }
    const grant: Grant = resolved.grant;
    const reservation = registry.reserve(grant.agentName);
    if (!reservation) return answer(reply, JSONRPC_ERRORS.tooManySessions, requestIdOf(request.body));

    let committed = false;
    const server = createMcpServer(deps.server, grant);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        committed = reservation.commit({
          id,
          grant,
          credentialHash: credentialHash(header),
          credentialValidUntil: resolved.validUntil,
          transport,
          close: () => server.close(),
        });
      },
    });
    // Set before connect(): the Protocol wraps an existing onclose, and a later assignment would replace it.
    transport.onclose = () => {
      if (transport.sessionId) void registry.end(transport.sessionId, 'transport closed');
    };
    try {
      await server.connect(transport);
      // A grant change between the key lookup and now refuses the session (design 4.7).
      if ((await deps.currentGeneration(grant.agentId)) !== grant.generation) {
        reservation.release();
        await server.close();
        deps.onInitializeRefused({ reason: 'grant changed', keyPresented: true });
        return unauthorized(reply, requestIdOf(request.body), 'revoked');
      }
      await handOver(request, reply, transport, request.body);
    } finally {
      reservation.release();
      // A key event that arrived while the session was starting ends it now: its next request gets 404.
      if (!committed && transport.sessionId) await server.close();
    }
    return reply;
  }

  app.post('/mcp', async (request, reply) => {
    const body = request.body;
    const sessionHeader = request.headers['mcp-session-id'];
    // An initialize still carrying a stale session id starts a new session: clients re-initializing
    // after a 404 sometimes forget to drop the header.
    if (isInitializeRequest(body)) return initialize(request, reply);
    return forSession(request, reply, sessionHeader, body);
  });

  app.get('/mcp', async (request, reply) => forSession(request, reply, request.headers['mcp-session-id']));
  app.delete('/mcp', async (request, reply) => forSession(request, reply, request.headers['mcp-session-id']));

  async function forSession(request: FastifyRequest, reply: FastifyReply, header: string | string[] | undefined, body?: unknown) {
    if (typeof header !== 'string' || !SESSION_ID.test(header)) return answer(reply, JSONRPC_ERRORS.missingSession, requestIdOf(body));
    const session = registry.touch(header.toLowerCase());
    if (!session) return answer(reply, JSONRPC_ERRORS.unknownSession, requestIdOf(body));
    // The credential comes with every request (MCP authorization: the Authorization header on each one).
    const presented = credentialHash(request.headers.authorization);
    if (presented === '') return unauthorized(reply, requestIdOf(body));
    if (presented === session.credentialHash) {
      // A bridge token past its own hour is refused here too, so the client refreshes it.
      const validUntil = session.credentialValidUntil;
      if (validUntil !== null && now().getTime() >= Date.parse(validUntil)) return unauthorized(reply, requestIdOf(body), 'expired');
      return handOver(request, reply, session.transport, body);
    }
    // Another credential on this session: accept it only if it resolves to the same grant (a refreshed
    // bridge token). A refused one gets 401, so the client renews it; another agent is told the session
    // does not exist.
    const resolved = await deps.resolveAuthorization(request.headers.authorization);
    if (!resolved.ok) return unauthorized(reply, requestIdOf(body), resolved.reason === 'missing' ? undefined : resolved.reason);
    if (resolved.grant.agentId !== session.grant.agentId || resolved.grant.generation !== session.grant.generation) {
      return answer(reply, JSONRPC_ERRORS.unknownSession, requestIdOf(body));
    }
    registry.rebind(session.id, presented, resolved.validUntil);
    return handOver(request, reply, session.transport, body);
  }
}
