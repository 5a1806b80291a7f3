import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AUDIT_PAGE_HEADERS, AuditRowSchema, createAuditReader } from '@pcg/shared/audit';
import type { DatabasePool } from '@pcg/shared/db';

export type AuditRouteDeps = {
  db: DatabasePool;
};

/**
 * `GET /api/audit` (spec 4.5): a bare JSON array, newest first, and the paging headers on every 200.
 * The query string is read by the reader, which answers bad values with the spec's exact messages;
 * the response schema is the wire row, so `user_id` cannot be served by accident.
 */
export function registerAuditRoutes(app: FastifyInstance, { db }: AuditRouteDeps): void {
  const auditReader = createAuditReader({ db });
  app.withTypeProvider<ZodTypeProvider>().get(
    '/api/audit',
    {
      schema: {
        querystring: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
        response: { 200: z.array(AuditRowSchema) },
      },
    },
    async (request, reply) => {
      const page = await auditReader.list(request.query);
      reply.header(AUDIT_PAGE_HEADERS.hasMore, String(page.hasMore));
      if (page.next !== null) reply.header(AUDIT_PAGE_HEADERS.next, page.next);
      return page.rows;
    },
  );
}
