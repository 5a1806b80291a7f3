import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SectorSchema } from '@pcg/shared/sectors';
import { ExportFormatSchema, type ExportService } from '../export/export-service.ts';

/**
 * `POST /api/export/:sector` with `{"format": "jsonl" | "csv"}`: a download of the sector's cached data,
 * the recorded `export` act. A POST, so the cross-site check stands in front of it like every other act.
 */
export function registerExportRoutes(app: FastifyInstance, { exports }: { exports: ExportService }): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/api/export/:sector',
    { schema: { params: z.object({ sector: SectorSchema }), body: z.strictObject({ format: ExportFormatSchema }) } },
    async (request, reply) => {
      const file = await exports.exportSector(request.params.sector, request.body.format, request.id);
      return reply
        .type(file.contentType)
        .header('content-disposition', `attachment; filename="${file.filename}"`)
        .header('cache-control', 'no-store')
        .header('x-export-count', String(file.count))
        .send(file.body);
    },
  );
}
