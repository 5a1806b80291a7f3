import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ConnectionCheckSchema } from '@pcg/shared/connections';
import type { ConnectionCheckService } from '../connections/connection-check-service.ts';

const Params = z.object({ id: z.uuid({ error: 'must be a connection id' }) });

/**
 * `POST /api/connections/:id/check` (issue 32), behind the Console's Host check like the other
 * connection routes: 200 with the steps whatever they found; 404 for an unknown connection.
 */
export function registerConnectionCheckRoute(app: FastifyInstance, checks: ConnectionCheckService): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/api/connections/:id/check',
    { schema: { params: Params, response: { 200: ConnectionCheckSchema } } },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return checks.check(request.params.id, request.id);
    },
  );
}
