import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ResolveKeyResult } from '@pcg/shared/grants';
import { ForbiddenError, UnauthorizedError } from '@pcg/shared/http';
import type { Caller, ReadService } from '@pcg/shared/reads';

/** The paths of the read mirror; exempt from the Console's Host check (spec 5). */
export const MIRROR_PATHS = ['/api/context', '/api/schema', '/api/query', '/api/records/', '/api/fetch_live'] as const;

export const MIRROR_MISSING_KEY = 'missing or malformed agent key: send Authorization: Bearer <agent key>';

export type MirrorDeps = {
  reads: ReadService;
  /** The shared resolver's `resolveAuthorization`; a refusal flagged `malformed` is answered 401. */
  resolveAuthorization(header: string | undefined): Promise<ResolveKeyResult>;
};

/**
 * The REST mirror of the agent reads (spec 4.4): the key is re-resolved on every request; a missing
 * or malformed key is 401, an unknown, revoked or expired one 403, and neither leaves an audit row.
 * Everything after that is the read service, which audits exactly as the MCP tools do.
 */
export function registerMirrorRoutes(app: FastifyInstance, deps: MirrorDeps): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();

  async function callerOf(request: FastifyRequest): Promise<Caller> {
    const resolved = await deps.resolveAuthorization(request.headers.authorization);
    if (resolved.ok) return { kind: 'agent', grant: resolved.grant, requestId: request.id };
    if (resolved.reason === 'missing' || ('malformed' in resolved && resolved.malformed)) throw new UnauthorizedError(MIRROR_MISSING_KEY);
    throw new ForbiddenError(`access denied: ${resolved.reason}`);
  }

  routes.get('/api/context', async (request) => deps.reads.describeContext(await callerOf(request)));

  routes.get('/api/schema', { schema: { querystring: z.object({ sector: z.string().max(64).optional() }) } }, async (request) =>
    deps.reads.getSchema(await callerOf(request), request.query.sector === undefined ? {} : { sector: request.query.sector }),
  );

  routes.post('/api/query', async (request) => deps.reads.query(await callerOf(request), request.body));

  routes.get(
    '/api/records/:sector/:id',
    { schema: { params: z.object({ sector: z.string().max(128), id: z.string().max(512) }) } },
    async (request) => deps.reads.getRecord(await callerOf(request), { object: request.params.sector, id: request.params.id }),
  );

  routes.post('/api/fetch_live', async (request) => deps.reads.fetchLive(await callerOf(request), request.body));
}
