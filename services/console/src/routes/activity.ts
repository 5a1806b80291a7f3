import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ActivityViewSchema, alertView, AlertViewSchema, createAlertStore, readActivity } from '@pcg/shared/activity';
import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder } from '@pcg/shared/audit';
import type { DatabasePool } from '@pcg/shared/db';
import { NotFoundError } from '@pcg/shared/errors';

export const ACTIVITY_PATH = '/api/activity';
export const ALERTS_PATH = '/api/alerts';

const AlertIdParamsSchema = z.object({ id: z.string().regex(/^[1-9][0-9]{0,17}$/, 'invalid alert id') });
const NewCountSchema = z.object({ new: z.number() });

/**
 * The activity screen's figures and the alerts (design 8.5, issue 41): operator reads of what the rollup and
 * the alert pass stored (not recorded, like The ledger's reads), and marking alerts seen, a Console act that
 * changes what is stored and so leaves its row (spec 6).
 */
export function registerActivityRoutes(app: FastifyInstance, { db, audit }: { db: DatabasePool; audit: AuditRecorder }): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const alerts = createAlertStore(db);
  const record = (args: Record<string, unknown>, requestId: string) =>
    audit.record({ agentId: OPERATOR_AGENT_ID, tool: CONSOLE_ACTS.acknowledgeAlerts, sector: null, decision: 'allow', args, outcome: 'ok', requestId });

  routes.get(ACTIVITY_PATH, { schema: { response: { 200: ActivityViewSchema } } }, () => readActivity(db));
  routes.get(ALERTS_PATH, { schema: { response: { 200: z.array(AlertViewSchema) } } }, async () => (await alerts.list()).map(alertView));
  routes.get(`${ALERTS_PATH}/count`, { schema: { response: { 200: NewCountSchema } } }, async () => ({ new: await alerts.countNew() }));
  routes.post(`${ALERTS_PATH}/seen`, async (request, reply) => {
    await alerts.markAllSeen();
    record({ all: true }, request.id);
    return reply.code(204).send();
  });
  routes.post(`${ALERTS_PATH}/:id/seen`, { schema: { params: AlertIdParamsSchema } }, async (request, reply) => {
    if (!(await alerts.markSeen(request.params.id))) throw new NotFoundError('no such alert');
    record({ alert: request.params.id }, request.id);
    return reply.code(204).send();
  });
}
