import type { CommonQueryMethods } from 'slonik';
import { agentStatus, resolveSectors, type Grant, type KeyRefusal } from '@pcg/shared/grants';
import type { BridgeEndpoints } from './bridge-endpoints.ts';
import { createBridgeQueries } from './bridge-queries.ts';
import { hashBridgeSecret } from './bridge-secrets.ts';

export type AccessTokenResult = { ok: true; grant: Grant; tokenExpiresAt: string } | { ok: false; reason: KeyRefusal };

/**
 * Resolves a `pcgat_` token to the grant row of the key it was made from (spec 5, bridge row): the same
 * name, sectors, generation and expiry ceiling, refused once the agent is revoked, deleted or expired,
 * once its key was rotated, or once the chain was revoked. The token is accepted only for the resource
 * it was issued for (the audience, RFC 8707), so it is refused while the bridge is off or moved.
 */
export async function resolveAccessToken(db: CommonQueryMethods, token: string, endpoints: BridgeEndpoints | null, now: Date): Promise<AccessTokenResult> {
  if (!endpoints) return { ok: false, reason: 'unknown agent' };
  const row = await createBridgeQueries(db).findAccessToken(hashBridgeSecret(token));
  if (!row || row.resource !== endpoints.resource) return { ok: false, reason: 'unknown agent' };
  if (row.chainRevoked || !row.keyCurrent) return { ok: false, reason: 'revoked' };
  const status = agentStatus({ revokedAt: row.agentRevokedAt, expiresAt: row.agentExpiresAt }, now);
  if (status !== 'active') return { ok: false, reason: status };
  if (now.getTime() >= Date.parse(row.tokenExpiresAt)) return { ok: false, reason: 'expired' };
  return {
    ok: true,
    tokenExpiresAt: row.tokenExpiresAt,
    grant: {
      agentId: row.agentId,
      agentName: row.agentName,
      sectors: resolveSectors(row.agentSectors),
      expiresAt: row.agentExpiresAt,
      generation: row.agentGeneration,
    },
  };
}

/**
 * The bridge credentials of live sessions (SHA-256 of each access token, hex) whose sign-in no longer
 * stands: the chain was revoked (a reused refresh token or code), the key rotated, or the agent deleted.
 * One query for all of them; the gateway's re-check ends those sessions when an event was missed.
 */
export async function findEndedBridgeCredentials(db: CommonQueryMethods, tokenHashesHex: readonly string[]): Promise<Set<string>> {
  if (tokenHashesHex.length === 0) return new Set();
  return new Set(await createBridgeQueries(db).endedAccessTokens(tokenHashesHex));
}
