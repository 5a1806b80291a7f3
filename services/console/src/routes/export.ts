import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SectorSchema } from '@pcg/shared/sectors';
import { ExportFormatSchema, mergedCopiesLeftOut, type ExportService } from '../export/export-service.ts';

/**
 * `POST /api/export/:sector` with `{"format": "jsonl" | "csv", "includeMergedCopies"?: true}`: a download
 * of the sector's cached data, the recorded `export` act. `x-export-merged-copies` says how many merged
 * copies were left out (or included), and a note header says what they are when some were left out. A POST, so the cross-site check stands in front of it like every other act.
 */
export function registerExportRoutes(app: FastifyInstance, { exports }: { exports: ExportService }): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/api/export/:sector',
    { schema: { params: z.object({ sector: SectorSchema }), body: z.strictObject({ format: ExportFormatSchema, includeMergedCopies: z.boolean().optional() }) } },
    async (request, reply) => {
      const { format, includeMergedCopies } = request.body;
      const file = await exports.exportSector(request.params.sector, format, request.id, { includeMergedCopies });
      const { count: copies, included } = file.mergedCopies;
      if (copies > 0 && !included) reply.header('x-export-merged-copies-note', mergedCopiesLeftOut(copies));
      return reply
        .header('x-export-merged-copies', `${copies} ${included ? 'included' : 'left out'}`)
        .type(file.contentType)
        .header('content-disposition', `attachment; filename="${file.filename}"`)
        .header('cache-control', 'no-store')
        .header('x-export-count', String(file.count))
        .send(file.body);
    },
  );
}
