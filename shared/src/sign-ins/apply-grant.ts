import { randomUUID } from 'node:crypto';
import type { DatabasePool } from 'slonik';
import { createConnectionQueries, type ConnectionRow } from '../connections/index.ts';
import { createSignInQueries } from './sign-ins-queries.ts';
import { demoEndpointsKey, type DemoEndpoints } from '../providers/demo-endpoints.ts';
import { DEMO_MARK_FIXED, NO_SECTORS_GRANTED, OTHER_ACCOUNT } from './sign-ins-types.ts';

export type Grant = {
  provider: { kind: string; displayName: string; defaultSyncIntervalMinutes: number | null };
  /** The sign-in being renewed; absent for a new sign-in (which still renews one of the same account). */
  signInId?: string;
  /** The provider's own id of the account that signed in; null when it reports none. */
  accountId: string | null;
  /** The scopes the provider reported granting (spec 2.5: not the ones asked for). */
  grantedScopes: readonly string[];
  /** The sectors those scopes cover, by the provider's rule. */
  sectors: readonly string[];
  /** A demo's sign-in (issue 42): its stand-ins, stored only when this grant makes the sign-in. */
  demoEndpoints?: DemoEndpoints;
  /** Seals the grant's credentials for a sign-in id (their associated data). */
  seal(signInId: string): Buffer;
};

export type GrantOutcome =
  | {
      outcome: 'signed_in';
      signInId: string;
      renewed: boolean;
      /** The connections that will sync: new ones and the ones granted again. */
      active: ConnectionRow[];
      /** Sectors of the sign-in the new grant no longer covers; their connections wait, their data kept. */
      waiting: string[];
    }
  | { outcome: 'refused'; message: string };

export const noLongerGranted = (sector: string) => `the sign-in no longer grants ${sector}; sign in again and grant it`;

/**
 * Applies a provider's grant in one transaction (spec 2.5, design 7.1). A new account makes a sign-in
 * and one connection per covered sector; none covered makes nothing. A grant for an account that
 * already has a sign-in of this provider renews it in place: the credentials are replaced, every
 * cached row is kept, newly covered sectors get a connection, and sectors no longer covered wait for a
 * sign-in with their data kept. Renewing a sign-in with another account is refused, so two people's
 * data never mix.
 */
export async function applyGrant(db: DatabasePool, grant: Grant): Promise<GrantOutcome> {
  if (grant.sectors.length === 0) return { outcome: 'refused', message: NO_SECTORS_GRANTED };
  return db.transaction(async (tx) => {
    const signIns = createSignInQueries(tx);
    const connections = createConnectionQueries(tx);
    const target = grant.signInId
      ? await signIns.get(grant.signInId)
      : grant.accountId === null
        ? null
        : await signIns.findByAccount(grant.provider.kind, grant.accountId);
    if (grant.signInId && (!target || target.provider !== grant.provider.kind)) {
      return { outcome: 'refused', message: `there is no ${grant.provider.displayName} sign-in to renew with that id` } as const;
    }
    if (target && (target.account_id === null || target.account_id !== grant.accountId)) return { outcome: 'refused', message: OTHER_ACCOUNT } as const;
    const markOf = (endpoints: DemoEndpoints | null | undefined) => (endpoints ? demoEndpointsKey(endpoints) : null);
    if (target && markOf(target.demo_endpoints) !== markOf(grant.demoEndpoints)) return { outcome: 'refused', message: DEMO_MARK_FIXED } as const;

    const signInId = target?.id ?? randomUUID();
    if (target) await signIns.replaceCredentials(signInId, grant.seal(signInId), { grantedScopes: grant.grantedScopes, accountId: grant.accountId });
    else await signIns.insert({ id: signInId, provider: grant.provider.kind, sealed: grant.seal(signInId), grantedScopes: grant.grantedScopes, accountId: grant.accountId, demoEndpoints: grant.demoEndpoints ?? null });

    const existing = target ? await connections.ofSignIn(signInId) : [];
    const have = new Set(existing.map((row) => row.sector));
    for (const sector of grant.sectors.filter((wanted) => !have.has(wanted))) {
      await connections.insert({
        id: randomUUID(),
        provider: grant.provider.kind,
        sector,
        displayName: grant.provider.displayName,
        signInId,
        ingestSecretHash: null,
        syncIntervalMinutes: grant.provider.defaultSyncIntervalMinutes,
      });
    }
    await connections.regranted(signInId, grant.sectors);
    const waiting = existing.map((row) => row.sector).filter((sector) => !grant.sectors.includes(sector));
    for (const sector of waiting) await connections.signInNeeded(signInId, noLongerGranted(sector), [sector]);
    const active = (await connections.ofSignIn(signInId)).filter((row) => row.status === 'active' || row.status === 'error');
    return { outcome: 'signed_in', signInId, renewed: target !== null, active: [...active], waiting } as const;
  });
}
