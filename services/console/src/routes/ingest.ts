import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditRecorder } from '@pcg/shared/audit';
import { DomainError } from '@pcg/shared/errors';
import { locateJsonError } from '@pcg/shared/ingest';
import type { IngestResult, IngestService, PushConnection } from '../ingest/ingest-service.ts';

/** The one answer to every refused push (spec 4.6, 7): unknown id, paused, no secret, wrong secret, malformed id. */
export const INGEST_UNAUTHORIZED = { error: 'unauthorized' } as const;

/** Every path under it is a push; what follows is the connection id, whatever its length or bytes. */
export const INGEST_PATH_PREFIX = '/api/ingest/';

/** Characters of a refused id kept in its audit row. */
const AUDITED_ID_CHARS = 64;

/** The deny row of a refused push (spec 6): `unauthorized`, with the id as far as it was given. */
function recordRefusedPush(audit: AuditRecorder, push: { sector: string | null; connectionId: string; requestId: string }): void {
  audit.record({
    agentId: null,
    tool: 'ingest',
    sector: push.sector,
    decision: 'deny',
    denyReason: 'unauthorized',
    args: { connectionId: push.connectionId.slice(0, AUDITED_ID_CHARS) },
    outcome: 'error',
    requestId: push.requestId,
  });
}

/**
 * Refuses a push whose URL fastify could not decode (invalid percent-encoding), which no route sees:
 * the same 401 and deny row as every other malformed id. Called from the app's `frameworkErrors`.
 */
export function refuseUndecodablePush(audit: AuditRecorder, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const rawId = request.url.slice(INGEST_PATH_PREFIX.length).split('?')[0] ?? '';
  recordRefusedPush(audit, { sector: null, connectionId: rawId, requestId: request.id });
  return reply.code(401).send(INGEST_UNAUTHORIZED);
}

export class MalformedJsonError extends DomainError {
  constructor(text: string) {
    const problem = locateJsonError(text);
    super('invalid', 'malformed_json', `malformed JSON at position ${problem.position} (line ${problem.line}, column ${problem.column}): ${problem.reason}`);
  }
}

/** At most this many rejected records are listed in an answer; `skipped` always counts them all. */
export const MAX_LISTED_REJECTIONS = 1000;

/** The words of a 400 for a push of which nothing could be stored. */
export function nothingStoredMessage(result: IngestResult): string {
  const listed = result.rejected.slice(0, 3).map((entry) => `${entry.record}: '${entry.field}' ${entry.error}`);
  const more = result.rejected.length > listed.length ? `; and ${result.rejected.length - listed.length} more` : '';
  return `no record of the push could be stored: ${listed.join('; ')}${more}`;
}

/** The answer's view of a result: the rejections listed (capped), the internal flag left out. */
function answerOf({ stored: _stored, rejected, ...result }: IngestResult) {
  return { ...result, rejected: rejected.slice(0, MAX_LISTED_REJECTIONS) };
}

type PushState = { denied: true; sector: string | null } | { denied: false; connection: PushConnection; result?: IngestResult };

/** The secret from `Authorization: Bearer …` (case-insensitive scheme) or `X-PCI-Webhook-Secret`. */
function presentedSecret(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  const bearer = typeof authorization === 'string' ? /^bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
  if (bearer) return bearer;
  const header = request.headers['x-pci-webhook-secret'];
  const value = Array.isArray(header) ? header[0] : header;
  return value?.trim() || undefined;
}

export type IngestRouteDeps = {
  ingest: IngestService;
  audit: AuditRecorder;
  /** Largest push accepted, in bytes; larger ones get 413. */
  bodyLimit: number;
};

type PushRequest = FastifyRequest<{ Params: { '*': string } }>;

/**
 * `POST /api/ingest/:connectionId` (spec 4.6, design 4.5). The id is the rest of the path (a wildcard,
 * so no id is too long or holds too many slashes to reach the check). The secret is checked in `onRequest`, before
 * fastify reads the body; no Host check applies. Every push leaves one `ingest` audit row, written when
 * the answer has gone (refused: deny/unauthorized; accepted: allow, with an error outcome when the body
 * was too large, not JSON, or not a payload we read). A push with some records that cannot be stored
 * keeps the others and answers 200 listing the rest; one of which nothing can be stored answers 400
 * listing them, and stores nothing.
 */
export function registerIngestRoutes(app: FastifyInstance, deps: IngestRouteDeps): void {
  const pushes = new WeakMap<FastifyRequest, PushState>();

  void app.register(async (scope) => {
    // Our own JSON parser: the default one's messages quote the body and do not always give a position.
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: deps.bodyLimit }, (_request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') return done(null, undefined);
      try {
        done(null, JSON.parse(text) as unknown);
      } catch {
        done(new MalformedJsonError(text), undefined);
      }
    });

    const authorize = async (request: PushRequest, reply: FastifyReply) => {
      const outcome = await deps.ingest.authorize(request.params['*'], presentedSecret(request));
      if (!outcome.ok) {
        pushes.set(request, { denied: true, sector: outcome.sector });
        return reply.code(401).send(INGEST_UNAUTHORIZED);
      }
      pushes.set(request, { denied: false, connection: outcome.connection });
    };

    const recordAudit = async (request: PushRequest, reply: FastifyReply) => {
      const push = pushes.get(request);
      if (!push) return;
      const connectionId = request.params['*'].slice(0, AUDITED_ID_CHARS);
      if (push.denied) {
        recordRefusedPush(deps.audit, { sector: push.sector, connectionId, requestId: request.id });
        return;
      }
      const result = push.result;
      deps.audit.record({
        agentId: null,
        tool: 'ingest',
        sector: push.connection.sector,
        decision: 'allow',
        args: { connectionId, status: reply.statusCode, ...(result ? { format: result.format, accepted: result.accepted, skipped: result.skipped } : {}) },
        resultCount: result ? Object.values(result.accepted).reduce((sum, count) => sum + count, 0) : 0,
        outcome: reply.statusCode < 400 ? 'ok' : 'error',
        requestId: request.id,
      });
    };

    scope.post<{ Params: { '*': string } }>(
      `${INGEST_PATH_PREFIX}*`,
      { bodyLimit: deps.bodyLimit, onRequest: authorize, onResponse: recordAudit },
      async (request, reply) => {
        const push = pushes.get(request);
        if (!push || push.denied) throw new Error('push reached the handler without authorization');
        push.result = await deps.ingest.ingest(push.connection, request.body);
        if (!push.result.stored) {
          return reply.code(400).send({ error: nothingStoredMessage(push.result), code: 'validation_failed', ...answerOf(push.result) });
        }
        return answerOf(push.result);
      },
    );
  });
}
