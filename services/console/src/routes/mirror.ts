import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Grant, ResolveKeyResult } from '@pcg/shared/grants';
import { ForbiddenError, UnauthorizedError, type DomainError } from '@pcg/shared/errors';
import type { Caller, ReadService } from '@pcg/shared/reads';

/** The paths of the read mirror; exempt from the Console's Host check (spec 5). */
export const MIRROR_PATHS = ['/api/context', '/api/schema', '/api/query', '/api/records/', '/api/fetch_live'] as const;

export const MIRROR_MISSING_KEY = 'missing or malformed agent key: send Authorization: Bearer <agent key>';

export type MirrorDeps = {
  reads: ReadService;
  /** The shared resolver's `resolveAuthorization`; a refusal flagged `malformed` is answered 401. */
  resolveAuthorization(header: string | undefined): Promise<ResolveKeyResult>;
};

/** A mirror request's key: its grant, or the refusal of spec 5 (401 missing or malformed, 403 refused). */
export async function checkMirrorKey(
  resolveAuthorization: MirrorDeps['resolveAuthorization'],
  header: string | undefined,
): Promise<{ ok: true; grant: Grant } | { ok: false; refusal: DomainError }> {
  const resolved = await resolveAuthorization(header);
  if (resolved.ok) return { ok: true, grant: resolved.grant };
  if (resolved.reason === 'missing' || ('malformed' in resolved && resolved.malformed)) return { ok: false, refusal: new UnauthorizedError(MIRROR_MISSING_KEY) };
  return { ok: false, refusal: new ForbiddenError(`access denied: ${resolved.reason}`) };
}

/** Whether a request's path is one of the read mirror's. */
export const isMirrorPath = (url: string): boolean =>
  MIRROR_PATHS.some((path) => (path.endsWith('/') ? url.startsWith(path) : url === path || url.startsWith(`${path}?`)));

/**
 * The REST mirror of the agent reads (spec 4.4): the key is re-resolved on every request; a missing
 * or malformed key is 401, an unknown, revoked or expired one 403, and neither leaves an audit row.
 * The key is resolved in each route's `onRequest` hook, before fastify looks at the content type, the
 * body or the parameters, so a caller without a standing key learns nothing about them (spec 5).
 * Everything after that is the read service, which audits exactly as the MCP tools do.
 */
export function registerMirrorRoutes(app: FastifyInstance, deps: MirrorDeps): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const callers = new WeakMap<FastifyRequest, Caller>();

  async function authenticate(request: FastifyRequest): Promise<void> {
    const checked = await checkMirrorKey(deps.resolveAuthorization, request.headers.authorization);
    if (!checked.ok) throw checked.refusal;
    callers.set(request, { kind: 'agent', grant: checked.grant, requestId: request.id });
  }

  function callerOf(request: FastifyRequest): Caller {
    const caller = callers.get(request);
    if (!caller) throw new Error('a mirror route ran without its key check');
    return caller;
  }

  const keyed = { onRequest: authenticate };

  routes.get('/api/context', keyed, async (request) => deps.reads.describeContext(callerOf(request)));

  routes.get('/api/schema', { ...keyed, schema: { querystring: z.object({ sector: z.string().max(64).optional() }) } }, async (request) =>
    deps.reads.getSchema(callerOf(request), request.query.sector === undefined ? {} : { sector: request.query.sector }),
  );

  routes.post('/api/query', keyed, async (request) => deps.reads.query(callerOf(request), request.body));

  routes.get(
    '/api/records/:sector/:id',
    { ...keyed, schema: { params: z.object({ sector: z.string().max(128), id: z.string().max(512) }) } },
    async (request) => deps.reads.getRecord(callerOf(request), { object: request.params.sector, id: request.params.id }),
  );

  routes.post('/api/fetch_live', keyed, async (request) => deps.reads.fetchLive(callerOf(request), request.body));
}
