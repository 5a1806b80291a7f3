import type { BridgeAccount } from './simplefin-mapping.ts';

/**
 * How a bridge account is keyed in the cache. Its id is unique only within its bridge connection (v2
 * `conn_id`, protocol-v2.md "Account": "uniquely identifies the account within the Connection"; v1 only
 * promised it within the `org`), so the key is `<scope>/<id>`, both parts percent-encoded: neither holds
 * `/` or `:`, and transaction and holding ids follow the key after a `:`.
 */
const encode = encodeURIComponent;

/**
 * The scope of rows cached before accounts were keyed by connection (re-keyed by the migration
 * `simplefin-connection-keys`): `%` alone is what no percent-encoded text can be, so no answered
 * account's key can ever take it.
 */
export const LEGACY_SCOPE = '%';

/** The connection (v2), else the institution the v1 answer named; empty when the answer names neither. */
function scopeOf(account: BridgeAccount): string {
  return account.conn_id ?? account.org.id ?? account.org.domain ?? account.org.name ?? account.org['sfin-url'] ?? '';
}

/** The key an answered account has by itself. */
export const naturalKey = (account: BridgeAccount): string => `${encode(scopeOf(account))}/${encode(account.id)}`;
const legacyKey = (account: BridgeAccount): string => `${LEGACY_SCOPE}/${encode(account.id)}`;

/** Legacy keys already taken, each with the natural key of the account that took it (kept in the cursor). */
export type LegacyClaims = Record<string, string>;

/**
 * Each answered account's key. A row cached before the migration knows its account's id but not its
 * connection; the first answer that lists that id once (no second login with the same id) claims it for
 * that account, and the claim is kept, so the row, its transactions and an answered account match stay
 * with the same account for good. Every other account takes its natural key.
 */
export function accountKeys(accounts: readonly BridgeAccount[], cached: ReadonlySet<string>, claims: LegacyClaims): { keys: Map<BridgeAccount, string>; claims: LegacyClaims } {
  const next: LegacyClaims = { ...claims };
  const claimedBy = new Map(Object.entries(next).map(([legacy, natural]) => [natural, legacy]));
  const seen = new Map<string, number>();
  for (const account of accounts) seen.set(account.id, (seen.get(account.id) ?? 0) + 1);
  const keys = new Map<BridgeAccount, string>();
  for (const account of accounts) {
    const natural = naturalKey(account);
    const legacy = legacyKey(account);
    let key = claimedBy.get(natural) ?? natural;
    if (key === natural && !cached.has(natural) && cached.has(legacy) && next[legacy] === undefined && seen.get(account.id) === 1) {
      next[legacy] = natural;
      key = legacy;
    }
    keys.set(account, key);
  }
  return { keys, claims: next };
}
