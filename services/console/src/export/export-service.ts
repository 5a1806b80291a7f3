import { OPERATOR_AGENT_ID, type AuditRecorder } from '@pcg/shared/audit';
import type { ReadService } from '@pcg/shared/reads';
import { objectsOfSector, type Sector } from '@pcg/shared/sectors';
import { z } from 'zod';
import { columnsOf, toCsv } from '../../web/csv.ts';

export const ExportFormatSchema = z.enum(['jsonl', 'csv']);
export type ExportFormat = z.infer<typeof ExportFormatSchema>;

export type ExportFile = { body: string; contentType: string; filename: string; count: number };

/** Rows read per page: the query engine's cap. */
const PAGE = 200;

/**
 * The operator's export of one sector's cached data (spec 2.3, 6): every object of the sector read
 * through the same engine as agents, as JSON Lines (one record a line, named by its object) or as one CSV
 * with an `object` column first and the ledger's formula escaping. One operator `export` row names the
 * sector, the format and the count; a failure leaves the row with outcome error.
 */
export function createExportService(deps: { reads: Pick<ReadService, 'query'>; audit: AuditRecorder; now?: () => Date }) {
  async function readSector(sector: Sector): Promise<Array<Record<string, unknown>>> {
    const records: Array<Record<string, unknown>> = [];
    for (const object of objectsOfSector(sector)) {
      let cursor: string | undefined;
      do {
        const page = await deps.reads.query({ kind: 'operator' }, { object: object.name, limit: PAGE, ...(cursor ? { cursor } : {}) });
        for (const row of page.rows) records.push({ object: object.name, ...row });
        cursor = page.has_more ? page.next_cursor : undefined;
      } while (cursor);
    }
    return records;
  }

  return {
    async exportSector(sector: Sector, format: ExportFormat, requestId?: string): Promise<ExportFile> {
      let count = 0;
      let outcome: 'ok' | 'error' = 'error';
      try {
        const records = await readSector(sector);
        count = records.length;
        const stamp = (deps.now?.() ?? new Date()).toISOString().slice(0, 10);
        const file: ExportFile =
          format === 'csv'
            ? { body: toCsv(columnsOf(records, ['object']), records), contentType: 'text/csv; charset=utf-8', filename: `${sector}-${stamp}.csv`, count }
            : { body: records.map((record) => `${JSON.stringify(record)}\n`).join(''), contentType: 'application/x-ndjson; charset=utf-8', filename: `${sector}-${stamp}.jsonl`, count };
        outcome = 'ok';
        return file;
      } finally {
        deps.audit.record({ agentId: OPERATOR_AGENT_ID, tool: 'export', sector, decision: 'allow', args: { sector, format }, resultCount: count, outcome, requestId });
      }
    },
  };
}

export type ExportService = ReturnType<typeof createExportService>;
