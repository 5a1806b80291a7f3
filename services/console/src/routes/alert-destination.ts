import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createDestinationStore, DestinationRefusedError, parseDestination } from '@pcg/shared/activity';
import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder } from '@pcg/shared/audit';
import type { DatabasePool } from '@pcg/shared/db';
import { ValidationError } from '@pcg/shared/errors';
import type { AddressPolicy } from '@pcg/shared/outbound';

export const ALERT_DESTINATION_PATH = '/api/alerts/destination';

const DestinationViewSchema = z.object({ set: z.boolean(), kind: z.enum(['ntfy', 'apprise']).nullable(), savedAt: z.string().nullable() });
const SaveDestinationSchema = z.object({ url: z.string().min(1).max(2048) }).strict();

export type AlertDestinationDeps = { db: DatabasePool; credentialsKey: Buffer; audit: AuditRecorder; addressPolicy: Pick<AddressPolicy, 'urlRefusal'> };

/**
 * Where alerts are sent (issue 41): write-only. The answer says whether one is set and its kind, never the
 * URL; the audit row of the act records only that it was set (or removed) and the kind.
 */
export function registerAlertDestinationRoutes(app: FastifyInstance, { db, credentialsKey, audit, addressPolicy }: AlertDestinationDeps): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const store = createDestinationStore(db, credentialsKey);
  const record = (args: Record<string, unknown>, requestId: string) =>
    audit.record({ agentId: OPERATOR_AGENT_ID, tool: CONSOLE_ACTS.setAlertDestination, sector: null, decision: 'allow', args, outcome: 'ok', requestId });

  routes.get(ALERT_DESTINATION_PATH, { schema: { response: { 200: DestinationViewSchema } } }, () => store.describe());
  routes.put(ALERT_DESTINATION_PATH, { schema: { body: SaveDestinationSchema, response: { 200: DestinationViewSchema } } }, async (request) => {
    let destination;
    try {
      destination = parseDestination(request.body.url);
    } catch (error) {
      if (error instanceof DestinationRefusedError) throw new ValidationError(error.message);
      throw error;
    }
    const refusal = addressPolicy.urlRefusal(destination.url);
    if (refusal) throw new ValidationError(`the destination is refused: ${refusal}`);
    await store.save(destination);
    record({ set: true, kind: destination.kind }, request.id);
    return store.describe();
  });
  routes.delete(ALERT_DESTINATION_PATH, async (request, reply) => {
    await store.remove();
    record({ set: false }, request.id);
    return reply.code(204).send();
  });
}
