import type { CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { OPERATOR_USER_ID } from '@pcg/shared/grants';

export const ClientRowSchema = z.object({
  id: z.string(),
  clientName: z.string().nullable(),
  redirectUris: z.array(z.string()),
  metadata: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  createdAt: z.string(),
});
export type ClientRow = z.infer<typeof ClientRowSchema>;

const CodeRowSchema = z.object({
  clientId: z.string(),
  agentId: z.number(),
  agentKeyHash: z.instanceof(Buffer),
  redirectUri: z.string(),
  codeChallenge: z.string(),
  resource: z.string(),
  scope: z.string().nullable(),
  expired: z.boolean(),
  usedAt: z.string().nullable(),
  chainId: z.string().nullable(),
});
export type CodeRow = z.infer<typeof CodeRowSchema>;

/** A token with the chain it belongs to and the agent row behind it, as of now. */
const TokenGrantSchema = z.object({
  tokenExpiresAt: z.string(),
  chainId: z.string(),
  clientId: z.string(),
  resource: z.string(),
  scope: z.string().nullable(),
  chainRevoked: z.boolean(),
  /** False once the agent's key was rotated after the sign-in: the chain then ends. */
  keyCurrent: z.boolean(),
  agentKeyHash: z.instanceof(Buffer),
  agentId: z.number(),
  agentName: z.string(),
  agentSectors: z.array(z.string()),
  agentRevokedAt: z.string().nullable(),
  agentExpiresAt: z.string().nullable(),
  agentGeneration: z.number(),
});
export type TokenGrant = z.infer<typeof TokenGrantSchema>;

const RefreshGrantSchema = TokenGrantSchema.extend({ rotatedAt: z.string().nullable(), replaySealed: z.instanceof(Buffer).nullable() });
export type RefreshGrant = z.infer<typeof RefreshGrantSchema>;

const AgentStandingSchema = z.object({ name: z.string(), revokedAt: z.string().nullable(), expiresAt: z.string().nullable(), keyCurrent: z.boolean() });

const CODE_COLUMNS = sql.fragment`
  client_id AS "clientId", agent_id AS "agentId", agent_key_hash AS "agentKeyHash", redirect_uri AS "redirectUri",
  code_challenge AS "codeChallenge", resource, scope, expires_at <= now() AS expired, used_at AS "usedAt", chain_id::text AS "chainId"`;

const CLIENT_COLUMNS = sql.fragment`id, client_name AS "clientName", redirect_uris AS "redirectUris", metadata, created_at AS "createdAt"`;

const TOKEN_GRANT_COLUMNS = sql.fragment`
  t.expires_at AS "tokenExpiresAt", c.id::text AS "chainId", c.client_id AS "clientId", c.resource, c.scope,
  c.revoked_at IS NOT NULL AS "chainRevoked", a.key_hash = c.agent_key_hash AS "keyCurrent", c.agent_key_hash AS "agentKeyHash",
  a.id AS "agentId", a.name AS "agentName", a.sectors AS "agentSectors", a.revoked_at AS "agentRevokedAt",
  a.expires_at AS "agentExpiresAt", a.generation AS "agentGeneration"`;

/** SQL for the bridge's tables. Codes and tokens are looked up by their SHA-256 only. */
export function createBridgeQueries(db: CommonQueryMethods) {
  return {
    async insertClient(input: Omit<ClientRow, 'createdAt'>): Promise<ClientRow> {
      return db.one(sql.type(ClientRowSchema)`
        INSERT INTO oauth_clients (id, user_id, client_name, redirect_uris, metadata)
        VALUES (${input.id}, ${OPERATOR_USER_ID}, ${input.clientName}, ${sql.array(input.redirectUris, 'text')}, ${sql.jsonb(input.metadata)})
        RETURNING ${CLIENT_COLUMNS}`);
    },

    async findClient(id: string): Promise<ClientRow | null> {
      return db.maybeOne(sql.type(ClientRowSchema)`SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE id = ${id} AND user_id = ${OPERATOR_USER_ID}`);
    },

    /** Removes registrations that never exchanged a code and are older than `olderThanMs`. */
    async reapUnusedClients(olderThanMs: number): Promise<number> {
      const rows = await db.any(sql.type(z.object({ id: z.string() }))`
        DELETE FROM oauth_clients WHERE last_used_at IS NULL AND created_at < now() - make_interval(secs => ${olderThanMs / 1000})
        RETURNING id`);
      return rows.length;
    },

    /** Removes codes and tokens that expired more than a day ago; they can never be used again. */
    async pruneExpired(): Promise<void> {
      await db.query(sql.unsafe`DELETE FROM oauth_codes WHERE expires_at < now() - interval '1 day'`);
      await db.query(sql.unsafe`DELETE FROM oauth_access_tokens WHERE expires_at < now() - interval '1 day'`);
      await db.query(sql.unsafe`DELETE FROM oauth_refresh_tokens WHERE expires_at < now() - interval '1 day'`);
    },

    async insertCode(input: Omit<CodeRow, 'expired' | 'usedAt' | 'chainId'> & { codeHash: Buffer; ttlMs: number }): Promise<void> {
      await db.query(sql.unsafe`
        INSERT INTO oauth_codes (code_hash, client_id, agent_id, agent_key_hash, redirect_uri, code_challenge, resource, scope, expires_at)
        VALUES (${sql.binary(input.codeHash)}, ${input.clientId}, ${input.agentId}, ${sql.binary(input.agentKeyHash)}, ${input.redirectUri},
                ${input.codeChallenge}, ${input.resource}, ${input.scope}, now() + make_interval(secs => ${input.ttlMs / 1000}))`);
    },

    /** Marks the code used and returns it; null when it was unknown or already used (see `findCode`). */
    async consumeCode(codeHash: Buffer): Promise<CodeRow | null> {
      return db.maybeOne(sql.type(CodeRowSchema)`
        UPDATE oauth_codes SET used_at = now() WHERE code_hash = ${sql.binary(codeHash)} AND used_at IS NULL
        RETURNING ${CODE_COLUMNS}`);
    },

    async findCode(codeHash: Buffer): Promise<CodeRow | null> {
      return db.maybeOne(sql.type(CodeRowSchema)`
        SELECT ${CODE_COLUMNS}
        FROM oauth_codes WHERE code_hash = ${sql.binary(codeHash)}`);
    },

    /** The agent a code was issued for, with whether its key is still the one signed in with. */
    async findAgent(agentId: number, keyHash: Buffer) {
      return db.maybeOne(sql.type(AgentStandingSchema)`
        SELECT name, revoked_at AS "revokedAt", expires_at AS "expiresAt", key_hash = ${sql.binary(keyHash)} AS "keyCurrent"
        FROM agents WHERE id = ${agentId} AND user_id = ${OPERATOR_USER_ID}`);
    },

    async insertChain(input: { agentId: number; agentKeyHash: Buffer; clientId: string; resource: string; scope: string | null; codeHash: Buffer }): Promise<string> {
      const chainId = await db.oneFirst(sql.type(z.object({ id: z.string() }))`
        INSERT INTO oauth_chains (agent_id, agent_key_hash, client_id, resource, scope)
        VALUES (${input.agentId}, ${sql.binary(input.agentKeyHash)}, ${input.clientId}, ${input.resource}, ${input.scope})
        RETURNING id::text AS id`);
      await db.query(sql.unsafe`UPDATE oauth_codes SET chain_id = ${chainId}::uuid WHERE code_hash = ${sql.binary(input.codeHash)}`);
      await db.query(sql.unsafe`UPDATE oauth_clients SET last_used_at = now() WHERE id = ${input.clientId}`);
      return chainId;
    },

    async revokeChain(chainId: string, reason: string): Promise<void> {
      await db.query(sql.unsafe`UPDATE oauth_chains SET revoked_at = now(), revoke_reason = ${reason} WHERE id = ${chainId}::uuid AND revoked_at IS NULL`);
    },

    async insertTokens(input: { chainId: string; accessHash: Buffer; accessExpiresAt: string; refreshHash: Buffer; refreshExpiresAt: string }): Promise<void> {
      await db.query(sql.unsafe`
        INSERT INTO oauth_access_tokens (token_hash, chain_id, expires_at)
        VALUES (${sql.binary(input.accessHash)}, ${input.chainId}::uuid, ${input.accessExpiresAt}::timestamptz)`);
      await db.query(sql.unsafe`
        INSERT INTO oauth_refresh_tokens (token_hash, chain_id, expires_at)
        VALUES (${sql.binary(input.refreshHash)}, ${input.chainId}::uuid, ${input.refreshExpiresAt}::timestamptz)`);
    },

    async findAccessToken(tokenHash: Buffer): Promise<TokenGrant | null> {
      return db.maybeOne(sql.type(TokenGrantSchema)`
        SELECT ${TOKEN_GRANT_COLUMNS}
        FROM oauth_access_tokens t JOIN oauth_chains c ON c.id = t.chain_id JOIN agents a ON a.id = c.agent_id
        WHERE t.token_hash = ${sql.binary(tokenHash)}`);
    },

    /** The refresh token with its chain and agent, locked until the transaction ends so one rotation wins. */
    async findRefreshTokenForUpdate(tokenHash: Buffer): Promise<RefreshGrant | null> {
      return db.maybeOne(sql.type(RefreshGrantSchema)`
        SELECT ${TOKEN_GRANT_COLUMNS}, t.rotated_at AS "rotatedAt", t.replay_sealed AS "replaySealed"
        FROM oauth_refresh_tokens t JOIN oauth_chains c ON c.id = t.chain_id JOIN agents a ON a.id = c.agent_id
        WHERE t.token_hash = ${sql.binary(tokenHash)}
        FOR UPDATE OF t`);
    },

    /**
     * Of these access tokens (SHA-256, hex), the ones that no longer stand for their sign-in: gone (the
     * agent was deleted, or the row was pruned), their chain revoked, or the agent's key rotated since.
     * A token past its own hour is not among them: the client refreshes it on the same session.
     */
    async endedAccessTokens(tokenHashesHex: readonly string[]): Promise<readonly string[]> {
      return db.anyFirst(sql.type(z.object({ tokenHash: z.string() }))`
        SELECT x.hex AS "tokenHash"
        FROM unnest(${sql.array(tokenHashesHex, 'text')}) AS x(hex)
        LEFT JOIN oauth_access_tokens t ON t.token_hash = decode(x.hex, 'hex')
        LEFT JOIN oauth_chains c ON c.id = t.chain_id
        LEFT JOIN agents a ON a.id = c.agent_id
        WHERE t.token_hash IS NULL OR c.revoked_at IS NOT NULL OR a.id IS NULL OR a.key_hash <> c.agent_key_hash`);
    },

    async markRotated(tokenHash: Buffer, replaySealed: Buffer | null): Promise<void> {
      await db.query(sql.unsafe`
        UPDATE oauth_refresh_tokens SET rotated_at = now(), replay_sealed = ${replaySealed ? sql.binary(replaySealed) : null}
        WHERE token_hash = ${sql.binary(tokenHash)}`);
    },
  };
}

export type BridgeQueries = ReturnType<typeof createBridgeQueries>;
