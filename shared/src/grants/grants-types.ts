import { z } from 'zod';
import { SectorSchema } from '../sectors/index.ts';

/** The single operator user every grant belongs to (spec 1.1; seeded by the first migration). */
export const OPERATOR_USER_ID = 1;

/**
 * A resolved agent grant (spec 2.2): the stored sectors already intersected with the six (`*` → all six),
 * what every surface (MCP session, read mirror, bridge) checks sectors against.
 */
export const GrantSchema = z.object({
  agentId: z.number().int(),
  /** The unique agent name, stored against every call the key makes (audit `agent_id`). */
  agentName: z.string(),
  sectors: z.array(SectorSchema),
  /** ISO instant the key dies at, or null when it never expires. */
  expiresAt: z.string().nullable(),
  /** Bumped on every grant change; a session holding an older generation is ended (design 4.7). */
  generation: z.number().int(),
});
export type Grant = z.infer<typeof GrantSchema>;

/** Why a presented key was refused; the texts follow `access denied: ` (spec 7). */
export const KEY_REFUSALS = ['unknown agent', 'revoked', 'expired'] as const;
export type KeyRefusal = (typeof KEY_REFUSALS)[number];

export type ResolveKeyResult =
  | { ok: true; grant: Grant }
  /** No Authorization header, another scheme, or `Bearer` with no key: counts as no key (spec 5). */
  | { ok: false; reason: 'missing' }
  /**
   * A refused key. `malformed` is set when the key is not even shaped like an agent key (wrong prefix,
   * length or alphabet): the agent port treats that as `unknown agent`, the read mirror answers 401.
   */
  | { ok: false; reason: KeyRefusal; malformed?: true };

/**
 * The agent events of design 4.7, published on `<prefix>agent-events` after every grant change commits.
 * `bridge_tokens_revoked`: a bridge refresh chain of the agent was revoked (a reused refresh token or
 * code), so a session opened with one of its tokens must not outlive it.
 */
export const AGENT_EVENT_KINDS = ['created', 'rotated', 'revoked', 'sectors_changed', 'deadline_changed', 'deleted', 'bridge_tokens_revoked'] as const;
export const AgentEventSchema = z.object({
  agent: z.string(),
  kind: z.enum(AGENT_EVENT_KINDS),
});
export type AgentEvent = z.infer<typeof AgentEventSchema>;
export const AGENT_EVENTS_CHANNEL = 'agent-events';

/** The stored sector value that resolves to all six sectors (spec 2.2). */
export const ALL_SECTORS_WILDCARD = '*';
