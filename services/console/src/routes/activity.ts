import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ActivityViewSchema, AlertSchema, createAlertStore, readActivity } from '@pcg/shared/activity';
import type { DatabasePool } from '@pcg/shared/db';
import { NotFoundError } from '@pcg/shared/http';

export const ACTIVITY_PATH = '/api/activity';
export const ALERTS_PATH = '/api/alerts';

const AlertIdParamsSchema = z.object({ id: z.string().regex(/^[1-9][0-9]{0,17}$/, 'invalid alert id') });
const NewCountSchema = z.object({ new: z.number() });

/**
 * The activity screen's figures and the alerts (design 8.5, issue 41): operator reads of what the rollup and
 * the alert pass stored (not recorded, like The ledger's reads), and marking alerts seen (operator
 * bookkeeping of their own reading; no audit row).
 */
export function registerActivityRoutes(app: FastifyInstance, { db }: { db: DatabasePool }): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const alerts = createAlertStore(db);

  routes.get(ACTIVITY_PATH, { schema: { response: { 200: ActivityViewSchema } } }, () => readActivity(db));
  routes.get(ALERTS_PATH, { schema: { response: { 200: z.array(AlertSchema) } } }, () => alerts.list());
  routes.get(`${ALERTS_PATH}/count`, { schema: { response: { 200: NewCountSchema } } }, async () => ({ new: await alerts.countNew() }));
  routes.post(`${ALERTS_PATH}/seen`, async (_request, reply) => {
    await alerts.markAllSeen();
    return reply.code(204).send();
  });
  routes.post(`${ALERTS_PATH}/:id/seen`, { schema: { params: AlertIdParamsSchema } }, async (request, reply) => {
    if (!(await alerts.markSeen(request.params.id))) throw new NotFoundError('no such alert');
    return reply.code(204).send();
  });
}
