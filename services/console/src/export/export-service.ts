import { OPERATOR_AGENT_ID, type AuditRecorder } from '@pcg/shared/audit';
import type { QueryEngine } from '@pcg/shared/query';
import { objectsOfSector, type ObjectDef, type Sector } from '@pcg/shared/sectors';
import { z } from 'zod';
import { columnsOf, toCsv } from '../../web/csv.ts';

export const ExportFormatSchema = z.enum(['jsonl', 'csv']);
export type ExportFormat = z.infer<typeof ExportFormatSchema>;

export type ExportFile = { body: string; contentType: string; filename: string; count: number; mergedCopies: MergedCopies };

/** Merged copies (spec 2.1): rows of an account another connection also delivers, which reads leave out. */
export type MergedCopies = { count: number; included: boolean };

/** Rows read per page: the query engine's cap. */
const PAGE = 200;

/** What the Console and the response header say when merged copies were left out (plain ASCII: a header value). */
export const mergedCopiesLeftOut = (count: number) =>
  `${count} merged ${count === 1 ? 'copy was' : 'copies were'} left out: rows of an account another connection also delivers, kept once as agents read them. Export again with includeMergedCopies to have them.`;

/** The object as agents read it, or with nothing left out (the same fields, no merged-copy filter). */
const withMergedCopies = (object: ObjectDef): ObjectDef => ({ ...object, hidesMerged: undefined });

/**
 * The operator's export of one sector's cached data (spec 2.3, 6): every object of the sector read
 * through the same engine as agents, as JSON Lines (one record a line, named by its object) or as one CSV
 * with an `object` column first and the ledger's formula escaping. Merged copies are left out as agents
 * see them, counted and said in the answer's headers; `includeMergedCopies` exports them too. The bodies
 * stay plain data. One operator `export` row names the sector, the format and the count; a failure
 * leaves the row with outcome error.
 */
export function createExportService(deps: { engine: Pick<QueryEngine, 'query'>; audit: AuditRecorder; now?: () => Date }) {
  async function readObject(object: ObjectDef): Promise<Array<Record<string, unknown>>> {
    const records: Array<Record<string, unknown>> = [];
    let cursor: string | undefined;
    do {
      const page = await deps.engine.query(object, { object: object.name, limit: PAGE, ...(cursor ? { cursor } : {}) });
      for (const row of page.rows) records.push({ object: object.name, ...row });
      cursor = page.has_more ? page.next_cursor : undefined;
    } while (cursor);
    return records;
  }

  async function countOf(object: ObjectDef): Promise<number> {
    const page = await deps.engine.query(object, { object: object.name, aggregate: { metrics: [{ fn: 'count' }] } });
    return Number(Object.values(page.rows[0] ?? {})[0] ?? 0);
  }

  async function readSector(sector: Sector, includeMergedCopies: boolean): Promise<{ records: Array<Record<string, unknown>>; mergedCopies: MergedCopies }> {
    const records: Array<Record<string, unknown>> = [];
    let copies = 0;
    for (const object of objectsOfSector(sector)) {
      const all = withMergedCopies(object);
      const read = await readObject(includeMergedCopies ? all : object);
      records.push(...read);
      if (object.hidesMerged) copies += includeMergedCopies ? (await countOf(all)) - (await countOf(object)) : (await countOf(all)) - read.length;
    }
    return { records, mergedCopies: { count: copies, included: includeMergedCopies } };
  }

  return {
    async exportSector(sector: Sector, format: ExportFormat, requestId?: string, options: { includeMergedCopies?: boolean } = {}): Promise<ExportFile> {
      const includeMergedCopies = options.includeMergedCopies === true;
      let count = 0;
      let outcome: 'ok' | 'error' = 'error';
      try {
        const { records, mergedCopies } = await readSector(sector, includeMergedCopies);
        count = records.length;
        const stamp = (deps.now?.() ?? new Date()).toISOString().slice(0, 10);
        const file: ExportFile =
          format === 'csv'
            ? { body: toCsv(columnsOf(records, ['object']), records), contentType: 'text/csv; charset=utf-8', filename: `${sector}-${stamp}.csv`, count, mergedCopies }
            : { body: records.map((record) => `${JSON.stringify(record)}\n`).join(''), contentType: 'application/x-ndjson; charset=utf-8', filename: `${sector}-${stamp}.jsonl`, count, mergedCopies };
        outcome = 'ok';
        return file;
      } finally {
        const args = includeMergedCopies ? { sector, format, includeMergedCopies } : { sector, format };
        deps.audit.record({ agentId: OPERATOR_AGENT_ID, tool: 'export', sector, decision: 'allow', args, resultCount: count, outcome, requestId });
      }
    },
  };
}

export type ExportService = ReturnType<typeof createExportService>;
