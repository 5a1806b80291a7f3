import { SECTORS, type Sector } from '../sectors/index.ts';
import type { AgentRecord, AgentStatus } from './agents-types.ts';
import { ALL_SECTORS_WILDCARD, type Grant } from './grants-types.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The stored sector list intersected with the six (spec 2.2): `*` gives all six, names that are not
 * sectors are dropped silently. The answer follows the fixed sector order, without duplicates.
 */
export function resolveSectors(stored: readonly string[]): Sector[] {
  if (stored.includes(ALL_SECTORS_WILDCARD)) return [...SECTORS];
  const granted = new Set(stored);
  return SECTORS.filter((sector) => granted.has(sector));
}

/** Whether a deadline has not yet been reached at `now`; a key is dead at its expiry instant (spec 3.1). */
export function deadlineNotReached(expiresAt: string | null, now: Date): boolean {
  return expiresAt === null || now.getTime() < Date.parse(expiresAt);
}

/**
 * The per-call deadline check every surface runs on a grant it holds (spec 5: "the deadline is still
 * checked on every call"). Revocation is not in a held grant; it arrives as an agent event.
 */
export function grantIsLive(grant: Pick<Grant, 'expiresAt'>, now: Date = new Date()): boolean {
  return deadlineNotReached(grant.expiresAt, now);
}

/** Revoked wins over expired: it is the operator's explicit act, and it is permanent. */
export function agentStatus(agent: Pick<AgentRecord, 'revokedAt' | 'expiresAt'>, now: Date): AgentStatus {
  if (agent.revokedAt !== null) return 'revoked';
  return deadlineNotReached(agent.expiresAt, now) ? 'active' : 'expired';
}

/** The deadline `days` whole days after `now`, or null (never expires) when no day count is given. */
export function deadlineFromDays(days: number | null | undefined, now: Date): string | null {
  if (days === null || days === undefined) return null;
  return new Date(now.getTime() + days * DAY_MS).toISOString();
}
