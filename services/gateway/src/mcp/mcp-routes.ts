import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { parseBearer, type Grant, type ResolveKeyResult } from '@pcg/shared/grants';
import type { Logger } from '@pcg/shared/logger';
import { JSONRPC_ERRORS, jsonRpcErrorBody, type JsonRpcErrorAnswer } from './jsonrpc-errors.ts';
import { createMcpServer, type McpServerDeps } from './mcp-server-factory.ts';
import type { SessionRegistry } from './session-registry.ts';

const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type InitializeRefusal = { reason: 'missing' | 'unknown agent' | 'revoked' | 'expired' | 'grant changed'; keyPresented: boolean };

export type McpRouteDeps = {
  registry: SessionRegistry;
  server: McpServerDeps;
  resolveAuthorization(header: string | undefined): Promise<ResolveKeyResult>;
  /** The agent's generation now, or null when it no longer exists; read again after a session starts. */
  currentGeneration(agentId: number): Promise<number | null>;
  /** Records a refused initialize (through the shared throttle). */
  onInitializeRefused(refusal: InitializeRefusal): void;
  log: Logger;
};

function answer(reply: FastifyReply, error: JsonRpcErrorAnswer, id: string | number | null = null) {
  return reply.code(error.status).send(jsonRpcErrorBody(error, id));
}

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
      return answer(reply, JSONRPC_ERRORS.unauthorized, requestIdOf(request.body));
    }
    const grant: Grant = resolved.grant;
    const reservation = registry.reserve(grant.agentName);
    if (!reservation) return answer(reply, JSONRPC_ERRORS.tooManySessions, requestIdOf(request.body));

    let committed = false;
    const server = createMcpServer(deps.server, grant);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        committed = reservation.commit({ id, grant, credentialHash: credentialHash(header), transport, close: () => server.close() });
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
        return answer(reply, JSONRPC_ERRORS.unauthorized, requestIdOf(request.body));
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
    const presented = credentialHash(request.headers.authorization);
    if (presented !== '' && presented !== session.credentialHash) {
      // Another credential on this session: accept it only if it resolves to the same grant (a refreshed
      // bridge token); anyone else is told the session does not exist.
      const resolved = await deps.resolveAuthorization(request.headers.authorization);
      if (!resolved.ok || resolved.grant.agentId !== session.grant.agentId || resolved.grant.generation !== session.grant.generation) {
        return answer(reply, JSONRPC_ERRORS.unknownSession, requestIdOf(body));
      }
      registry.rebind(session.id, presented);
    }
    return handOver(request, reply, session.transport, body);
  }
}
