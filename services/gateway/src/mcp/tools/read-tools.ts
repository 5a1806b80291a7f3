import { z } from 'zod';
import { PAGE_BUDGET_CHARS, QueryInputSchema } from '@pcg/shared/query';
import { FetchLiveInputSchema, GetRecordInputSchema, GetSchemaInputSchema, type ReadService } from '@pcg/shared/reads';
import { SCHEMA_PER_SECTOR } from '../instructions.ts';
import type { ToolDef } from './tool-types.ts';

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** The five reads, each a thin call into the shared read service (which checks, audits and maps errors). */
export function readTools(reads: ReadService): ToolDef[] {
  return [
    {
      name: 'describe_context',
      title: 'Describe context',
      description:
        'Call this first. Returns your granted sectors (an empty list when none) and, for each connected source in them, its name as the person gave it (display_name), provider, sector, status, health and how old its data is (data_age_seconds).',
      inputSchema: z.object({}),
      annotations: READ_ONLY,
      handler: (_args, caller) => reads.describeContext(caller),
    },
    {
      name: 'get_schema',
      title: 'Get schema',
      description:
        `Lists the objects you may query and their fields (type, unit, filterable, sortable), with notes and fieldDocs that explain sign conventions, units and time zones. Read them before filtering. Objects of sectors you were not granted are absent. ${SCHEMA_PER_SECTOR}`,
      inputSchema: GetSchemaInputSchema,
      annotations: READ_ONLY,
      handler: (args, caller) => reads.getSchema(caller, args),
    },
    {
      name: 'query',
      title: 'Query',
      description:
        `Structured read of ONE object in ONE sector from the local cache: filters, ordering, field selection, or an aggregate. Pages are capped at limit rows and at ${PAGE_BUDGET_CHARS} characters; has_more: true means this is one page, and next_cursor fetches the next. A page cut for size says so (cut_for_size); name fewer fields with select to get more rows per page.`,
      inputSchema: QueryInputSchema,
      annotations: READ_ONLY,
      handler: (args, caller) => reads.query(caller, args),
    },
    {
      name: 'get_record',
      title: 'Get record',
      description: 'One stored record by its id (the id field of a query row), with every field.',
      inputSchema: GetRecordInputSchema,
      annotations: READ_ONLY,
      handler: (args, caller) => reads.getRecord(caller, args),
    },
    {
      name: 'fetch_live',
      title: 'Fetch live',
      description:
        'The only read that leaves the cache and asks the source itself, for current data (for example the state of a device right now). Slower than query; nothing it returns is stored. ' +
          "Each object's fetch_live note in get_schema says which providers can be read live; where none of the sector's connections can, this is an error that sends you to query. " +
          'Every connection of the sector that can be read live is asked; connections lists what each did (answered with row_count, failed with its error, or skipped with the reason), and each row carries its connection_id. Pass connection_id to ask one.',
      inputSchema: FetchLiveInputSchema,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      handler: (args, caller) => reads.fetchLive(caller, args),
    },
  ];
}
