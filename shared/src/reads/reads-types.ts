import { z } from 'zod';
import type { Grant } from '../grants/index.ts';
import { SectorSchema } from '../sectors/index.ts';
import { LiveFilterSchema } from '../live/index.ts';
import { EXPECTED_TEXT, isStorableText } from '../query/index.ts';

/** Who is reading: an agent under its grant (audited), or the operator with every sector (not audited). */
export type Caller = { kind: 'agent'; grant: Grant; requestId?: string } | { kind: 'operator'; requestId?: string };

export const GetSchemaInputSchema = z
  .object({ sector: z.string().max(64).optional().describe('Only this sector\'s objects; default every granted sector.') })
  .strict();

export const GetRecordInputSchema = z
  .object({
    object: z.string().min(1).max(128).describe('The object, e.g. finance.transaction (a bare sector name searches all its objects).'),
    id: z.string().min(1).max(512).refine(isStorableText, EXPECTED_TEXT).describe('The record\'s gateway id (the id field of a query row).'),
  })
  .strict();

export const FetchLiveInputSchema = z
  .object({
    object: z.string().min(1).max(128).describe('The object to read live from its source, e.g. home.entity.'),
    id: z.string().min(1).max(512).refine(isStorableText, EXPECTED_TEXT).optional().describe('One record: its gateway id or source id.'),
    where: z.array(LiveFilterSchema).max(20).optional().describe('Filters the source should apply, as in query.'),
    connection_id: z
      .uuid({ error: 'connection_id: expected a connection id as describe_context lists it' })
      .optional()
      .describe('Ask only this connection (an id from describe_context); default: every connection of the sector that can be read live.'),
  })
  .strict();

export const ConnectionSummarySchema = z.object({
  id: z.string(),
  /** The name the person gave the connection ("Demo phone"), the one they use when they ask. */
  display_name: z.string(),
  sector: SectorSchema,
  provider: z.string(),
  status: z.string(),
  last_synced_at: z.string().nullable(),
  data_age_seconds: z.number().nullable(),
  health: z.string(),
  consent_expires_at: z.string().nullable().optional(),
  /** Finance only: why the health is not ok (the source's reason, a bank that did not answer), or null. */
  health_reason: z.string().nullable().optional(),
});
export type ConnectionSummary = z.infer<typeof ConnectionSummarySchema>;

export type DescribeContextResult = {
  service: string;
  sectors: string[];
  connections: ConnectionSummary[];
  now: string;
  /** The person's IANA time zone: relative dates, local buckets and local dates use it. */
  time_zone: string;
  time_zone_source: 'setting' | 'hub' | 'machine';
  /** Today's date in that zone. */
  today: string;
};
