import { z } from 'zod';
import { pgText } from '../validation/index.ts';

/** Where a key stands at an instant (spec 3.1); `unknown` is a key with no row, so it has no status. */
export const AGENT_STATUSES = ['active', 'revoked', 'expired'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** One `agents` row as the queries read it. `keyHash` is read only where a key is compared. */
export const AgentRowSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  keyHash: z.instanceof(Buffer),
  /** As stored: may hold `*` and names that are not sectors; resolution intersects them with the six. */
  sectors: z.array(z.string()),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  generation: z.number().int(),
  updatedAt: z.string(),
});
export type AgentRow = z.infer<typeof AgentRowSchema>;

/** A row without its key hash: what every query that does not compare a key reads. */
export const AgentRecordSchema = AgentRowSchema.omit({ keyHash: true });
export type AgentRecord = z.infer<typeof AgentRecordSchema>;

/**
 * An agent as the Console lists it. Picked from the row, so the key hash cannot be serialised: fields
 * outside the schema are stripped from every answer that uses it.
 */
export const AgentViewSchema = AgentRowSchema.pick({
  name: true,
  sectors: true,
  createdAt: true,
  expiresAt: true,
  revokedAt: true,
  updatedAt: true,
}).extend({ status: z.enum(AGENT_STATUSES) });
export type AgentView = z.infer<typeof AgentViewSchema>;

/** The answer to a create or a rotation (design 4.4): the only place a key is ever shown. */
export const IssuedKeySchema = AgentRowSchema.pick({ name: true, sectors: true, createdAt: true, expiresAt: true }).extend({
  key: z.string(),
});
export type IssuedKey = z.infer<typeof IssuedKeySchema>;

/** What the 400 answers say is allowed; the routes and their tests use these texts. */
export const AGENT_RULES = {
  name: 'must be 1 to 64 characters: letters, digits, ".", "_" or "-", starting with a letter or a digit',
  reservedName: 'must not be "operator" (the audit record uses it for Console acts)',
  sectors: 'must be an array of sector names (strings of 1 to 64 characters, at most 64 of them)',
  wildcardInPatch: 'must not contain "*"; a wildcard grant can only be written through POST /api/agents',
  expiresInDays: 'must be an integer from 1 to 3650, or null for no expiry',
  renameInPatch: 'must match the agent named in the path; an agent cannot be renamed',
  emptyPatch: 'the body must set "sectors" or "expiresInDays"',
} as const;

export const MAX_EXPIRES_IN_DAYS = 3650;
export const MAX_AGENT_NAME_LENGTH = 64;

export const AgentNameSchema = z
  .string({ error: AGENT_RULES.name })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { error: AGENT_RULES.name })
  .refine((name) => name.toLowerCase() !== 'operator', { error: AGENT_RULES.reservedName });

/** Stored as given (deduplicated): `*` and unknown names are allowed here and sorted out at resolution. */
export const StoredSectorsSchema = z
  .array(pgText(z.string({ error: AGENT_RULES.sectors }).min(1, { error: AGENT_RULES.sectors }).max(64, { error: AGENT_RULES.sectors })), {
    error: AGENT_RULES.sectors,
  })
  .max(64, { error: AGENT_RULES.sectors })
  .transform((sectors) => [...new Set(sectors)]);

export const ExpiresInDaysSchema = z
  .number({ error: AGENT_RULES.expiresInDays })
  .int({ error: AGENT_RULES.expiresInDays })
  .min(1, { error: AGENT_RULES.expiresInDays })
  .max(MAX_EXPIRES_IN_DAYS, { error: AGENT_RULES.expiresInDays })
  .nullable();

function unknownFieldsMessage(allowed: string[]) {
  return (issue: { code?: string; keys?: string[] }) =>
    issue.code === 'unrecognized_keys'
      ? `unknown field ${(issue.keys ?? []).map((key) => `"${key}"`).join(', ')}; allowed fields: ${allowed.join(', ')}`
      : 'must be a JSON object';
}

/**
 * `POST /api/agents`. Unknown fields are refused, so a misspelt `expiresInDays` cannot silently create a
 * key that never expires. `expiresInDays` absent or null: the key never expires.
 */
export const CreateAgentInputSchema = z.strictObject(
  {
    name: AgentNameSchema,
    sectors: StoredSectorsSchema,
    expiresInDays: ExpiresInDaysSchema.optional(),
  },
  { error: unknownFieldsMessage(['name', 'sectors', 'expiresInDays']) },
);
export type CreateAgentInput = z.output<typeof CreateAgentInputSchema>;

/** `PATCH /api/agents/:name`: `expiresInDays: null` removes the deadline; an absent field is unchanged. */
export const UpdateAgentInputSchema = z
  .strictObject(
    {
      name: AgentNameSchema.optional(),
      sectors: StoredSectorsSchema.refine((sectors) => !sectors.includes('*'), { error: AGENT_RULES.wildcardInPatch }).optional(),
      expiresInDays: ExpiresInDaysSchema.optional(),
    },
    { error: unknownFieldsMessage(['sectors', 'expiresInDays', 'name']) },
  )
  .refine((input) => input.sectors !== undefined || input.expiresInDays !== undefined, { error: AGENT_RULES.emptyPatch });
export type UpdateAgentInput = z.output<typeof UpdateAgentInputSchema>;
