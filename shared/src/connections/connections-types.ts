import { z } from 'zod';

/** Where a connection stands; the moves between them are the functions of `connections-queries.ts`. */
export const ConnectionStatusSchema = z.enum(['active', 'paused', 'error', 'needs_sign_in']);
export type ConnectionStatus = z.infer<typeof ConnectionStatusSchema>;

/**
 * The one shape of a connection row as every process reads it. It holds no credential and no secret
 * hash: those are read by the two functions that need them (`sealedCredentials`, `forIngest`), so no
 * view built from this row can carry them.
 */
export const ConnectionRowSchema = z.object({
  id: z.string(),
  provider: z.string(),
  sector: z.string(),
  display_name: z.string(),
  status: ConnectionStatusSchema,
  /** The provider grant whose credentials it uses; null for push connections. */
  sign_in_id: z.string().nullable(),
  sync_interval_minutes: z.number().nullable(),
  /** Connector-private state; null before the first whole sync. */
  sync_cursor: z.unknown(),
  /** The action catalogue the last sync stored (design 4.3 list_actions). */
  actions: z.unknown(),
  last_synced_at: z.string().nullable(),
  last_error: z.string().nullable(),
  has_ingest_secret: z.boolean(),
  /** Finance only: the earliest consent expiry its accounts report (spec 2.1). */
  consent_expires_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConnectionRow = z.infer<typeof ConnectionRowSchema>;

export type NewConnection = {
  id: string;
  provider: string;
  sector: string;
  displayName: string;
  /** The sign-in whose credentials it uses; null for push connections. */
  signInId: string | null;
  ingestSecretHash: Buffer | null;
  syncIntervalMinutes: number | null;
};

/** A push connection as the ingest route checks it, with the hash its secret is compared with. */
export const IngestRowSchema = z.object({
  id: z.string(),
  provider: z.string(),
  sector: z.string(),
  status: ConnectionStatusSchema,
  ingest_secret_hash: z.instanceof(Buffer).nullable(),
});
export type IngestRow = z.infer<typeof IngestRowSchema>;
