import { z } from 'zod';
import { DemoEndpointsSchema } from '@pcg/shared/providers';
import { pgText } from '@pcg/shared/validation';

export const ConnectionViewSchema = z.object({
  id: z.string(),
  provider: z.string(),
  providerName: z.string(),
  sector: z.string(),
  displayName: z.string(),
  status: z.enum(['active', 'paused', 'error', 'needs_sign_in']),
  /** ok, pending (never synced), stale (no data for a day), error, paused, needs_sign_in. */
  health: z.string(),
  signIn: z.enum(['token', 'push', 'oauth', 'link']),
  /** The sign-in whose credentials it uses; null for push connections. */
  signInId: z.string().nullable(),
  /** Null for push connections, which are never pulled. */
  syncIntervalMinutes: z.number().nullable(),
  /** For push connections, the last accepted push. */
  lastSyncedAt: z.string().nullable(),
  lastError: z.string().nullable(),
  actionCount: z.number(),
  /** Where the device pushes, for push connections. */
  ingestPath: z.string().optional(),
  hasIngestSecret: z.boolean(),
  /** Finance only, when the bank reports one: the earliest instant its consent for the link expires (spec 2.1). */
  consentExpiresAt: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ConnectionView = z.infer<typeof ConnectionViewSchema>;

const interval = z.number().int().min(1).max(7 * 24 * 60);

export const CreateConnectionBodySchema = z.object({
  provider: pgText(z.string().min(1).max(100)),
  displayName: pgText(z.string().trim().min(1).max(200)).optional(),
  syncIntervalMinutes: interval.optional(),
  /** Provider-specific, e.g. Home Assistant `{baseUrl, token}`; sealed before it is stored, never shown again. */
  credentials: z.unknown().optional(),
  /** A demo's connection (issue 42): the local servers its new sign-in is marked with; from this machine only. */
  demo: DemoEndpointsSchema.optional(),
});
export type CreateConnectionBody = z.infer<typeof CreateConnectionBodySchema>;

export const UpdateConnectionBodySchema = z
  .object({
    syncIntervalMinutes: interval.optional(),
    displayName: pgText(z.string().trim().min(1).max(200)).optional(),
    /** New credentials for a token provider (a re-issued hub token); the connection becomes active again. */
    credentials: z.unknown().optional(),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), { error: 'name at least one of syncIntervalMinutes, displayName, credentials' });
export type UpdateConnectionBody = z.infer<typeof UpdateConnectionBodySchema>;

export const ConnectionWithSecretSchema = z.object({
  connection: ConnectionViewSchema,
  /** Every connection the sign-in made, one per sector (the first is `connection`). */
  connections: z.array(ConnectionViewSchema).optional(),
  /** Shown once; only its SHA-256 is stored. */
  ingestSecret: z.string().optional(),
  /** Set when the change is saved but its sync could not be queued. */
  warning: z.string().optional(),
});

export const ConnectionResultSchema = z.object({ connection: ConnectionViewSchema, warning: z.string().optional() });
