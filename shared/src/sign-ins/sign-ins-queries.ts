import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { createConnectionQueries } from '../connections/index.ts';
import { OPERATOR_USER_ID } from '../db/operator-user.ts';
import type { DemoEndpoints } from '../providers/demo-endpoints.ts';
import { SignInRowSchema, SignInWithConnectionsSchema, type SignInRow } from './sign-ins-types.ts';

const COLUMNS = sql.fragment`
  s.id::text AS id, s.provider, s.status, s.granted_scopes, s.account_id, s.last_refreshed_at, s.last_error, s.demo_endpoints, s.created_at, s.updated_at`;
const MINE = sql.fragment`s.user_id = ${OPERATOR_USER_ID}`;

/** The SQL on `sign_ins` and `provider_apps`. `db` may be a pool or a transaction. */
export function createSignInQueries(db: CommonQueryMethods) {
  const connections = createConnectionQueries(db);
  const get = (id: string): Promise<SignInRow | null> =>
    db.maybeOne(sql.type(SignInRowSchema)`SELECT ${COLUMNS} FROM sign_ins s WHERE s.id = ${id}::uuid AND ${MINE}`);

  return {
    get,
    /** Every sign-in with the connections it holds, by provider then age; never the credentials. */
    listWithConnections: () =>
      db.any(sql.type(SignInWithConnectionsSchema)`
        SELECT ${COLUMNS},
          COALESCE(json_agg(json_build_object('id', c.id::text, 'sector', c.sector, 'display_name', c.display_name, 'status', c.status) ORDER BY c.sector)
            FILTER (WHERE c.id IS NOT NULL), '[]') AS connections
        FROM sign_ins s LEFT JOIN connections c ON c.sign_in_id = s.id
        WHERE ${MINE}
        GROUP BY s.id
        ORDER BY s.provider, s.created_at, s.id`),

    findByAccount: (provider: string, accountId: string) =>
      db.maybeOne(sql.type(SignInRowSchema)`SELECT ${COLUMNS} FROM sign_ins s WHERE ${MINE} AND s.provider = ${provider} AND s.account_id = ${accountId}`),

    /** A new sign-in; `demoEndpoints` marks a demo's, here and only here (the column refuses any later change). */
    async insert(row: { id: string; provider: string; sealed: Buffer; grantedScopes: readonly string[]; accountId: string | null; demoEndpoints?: DemoEndpoints | null }): Promise<void> {
      await db.query(sql.unsafe`
        INSERT INTO sign_ins (id, user_id, provider, credentials, granted_scopes, account_id, demo_endpoints)
        VALUES (${row.id}::uuid, ${OPERATOR_USER_ID}, ${row.provider}, ${sql.binary(row.sealed)}, ${sql.array([...row.grantedScopes], 'text')}, ${row.accountId},
          ${row.demoEndpoints ? sql.jsonb(row.demoEndpoints) : null})`);
    },

    /** The sealed credentials, bound to the sign-in's id; null when there is no such sign-in. */
    sealed: (id: string) => db.maybeOneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`SELECT s.credentials FROM sign_ins s WHERE s.id = ${id}::uuid AND ${MINE}`),

    /**
     * A new grant replaces the old one in place (a re-sign-in, or a pasted token): the sign-in is
     * active again. Scopes and account are kept when not given (a pasted token reports none).
     */
    async replaceCredentials(id: string, sealed: Buffer, grant: { grantedScopes?: readonly string[]; accountId?: string | null } = {}): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE sign_ins s SET credentials = ${sql.binary(sealed)}, status = 'active', last_error = NULL,
          granted_scopes = COALESCE(${grant.grantedScopes ? sql.array([...grant.grantedScopes], 'text') : null}::text[], granted_scopes),
          account_id = CASE WHEN ${grant.accountId !== undefined} THEN ${grant.accountId ?? null} ELSE account_id END,
          updated_at = now()
        WHERE s.id = ${id}::uuid AND ${MINE}`);
    },

    /** Rotated tokens from a refresh, written back sealed. */
    async refreshed(id: string, sealed: Buffer): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE sign_ins s SET credentials = ${sql.binary(sealed)}, last_refreshed_at = now(), last_error = NULL, updated_at = now()
        WHERE s.id = ${id}::uuid AND ${MINE}`);
    },

    /** The grant is gone (refused refresh, revoked token or link): the sign-in and all its connections need a new sign-in. */
    async grantGone(id: string, message: string): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE sign_ins s SET status = 'needs_sign_in', last_error = ${message}, updated_at = now() WHERE s.id = ${id}::uuid AND ${MINE}`);
      await connections.signInNeeded(id, message);
    },

    /**
     * The provider refused the gateway's application credentials on a refresh: the grant is kept and the
     * sign-in stays active, but it and its running connections say why nothing renews until new
     * application credentials are saved (the next refresh that works clears it).
     */
    async appRefused(id: string, message: string): Promise<void> {
      await db.query(sql.unsafe`
        WITH s AS (
          UPDATE sign_ins s SET last_error = ${message}, updated_at = now() WHERE s.id = ${id}::uuid AND ${MINE} RETURNING s.id
        )
        UPDATE connections c SET status = CASE WHEN c.status = 'active' THEN 'error' ELSE c.status END, last_error = ${message}, updated_at = now()
        FROM s WHERE c.sign_in_id = s.id AND c.status IN ('active', 'error')`);
    },

    /** Saves (or replaces) a provider's sealed application credentials. */
    async saveApp(provider: string, sealed: Buffer): Promise<void> {
      await db.query(sql.unsafe`
        INSERT INTO provider_apps (user_id, provider, credentials) VALUES (${OPERATOR_USER_ID}, ${provider}, ${sql.binary(sealed)})
        ON CONFLICT (user_id, provider) DO UPDATE SET credentials = EXCLUDED.credentials, updated_at = now()`);
    },
    /** The providers whose application credentials are saved (their kinds only). */
    savedAppProviders: () => db.anyFirst(sql.type(z.object({ provider: z.string() }))`SELECT provider FROM provider_apps WHERE user_id = ${OPERATOR_USER_ID} ORDER BY provider`),
    sealedApp: (provider: string) =>
      db.maybeOneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
        SELECT credentials FROM provider_apps WHERE user_id = ${OPERATOR_USER_ID} AND provider = ${provider}`),
  };
}

export type SignInQueries = ReturnType<typeof createSignInQueries>;

/** Associated data of a provider's sealed application credentials. */
export const providerAppContext = (provider: string) => `provider-app:${provider}`;
