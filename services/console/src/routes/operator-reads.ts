import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ValidationError } from '@pcg/shared/errors';
import type { Caller, ReadService } from '@pcg/shared/reads';
import { SectorSchema } from '@pcg/shared/sectors';

const OPERATOR: Caller = { kind: 'operator' };

/**
 * The operator's own reads (spec 4.4): the data inspector, context and schema, over every sector and
 * through the same engine as agents. None of them is recorded (spec 6), except the operator's live read
 * of a source, `POST /api/operator/fetch_live` (same body as the tool), a Console act with its row.
 * Behind the Host check.
 */
export function registerOperatorReadRoutes(app: FastifyInstance, deps: { reads: ReadService }): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const sectorParam = z.object({ sector: SectorSchema });

  routes.post('/api/data/:sector', { schema: { params: sectorParam } }, async (request) => {
    const object = (request.body as { object?: unknown } | undefined)?.object;
    if (typeof object !== 'string' || !object.startsWith(`${request.params.sector}.`)) {
      throw new ValidationError(`object: name an object of sector '${request.params.sector}', e.g. '${request.params.sector}.…'`);
    }
    return deps.reads.query(OPERATOR, request.body);
  });

  routes.get('/api/data/:sector/:id', { schema: { params: sectorParam.extend({ id: z.string().max(512) }) } }, async (request) =>
    deps.reads.getRecord(OPERATOR, { object: request.params.sector, id: request.params.id }),
  );

  routes.post('/api/operator/fetch_live', async (request) => deps.reads.fetchLive({ kind: 'operator', requestId: request.id }, request.body));

  routes.get('/api/operator/context', async () => deps.reads.describeContext(OPERATOR));

  routes.get('/api/operator/schema', { schema: { querystring: z.object({ sector: z.string().max(64).optional() }) } }, async (request) =>
    deps.reads.getSchema(OPERATOR, request.query.sector === undefined ? {} : { sector: request.query.sector }),
  );
}
