import type { CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { sql, type DirectPool } from '../db/index.ts';
import { AgentRecordSchema, AgentRowSchema, type AgentRecord, type AgentRow } from './agents-types.ts';
import { OPERATOR_USER_ID } from './grants-types.ts';

const RECORD_COLUMNS = sql.fragment`
  id, name, sectors, created_at AS "createdAt", revoked_at AS "revokedAt", expires_at AS "expiresAt",
  generation, updated_at AS "updatedAt"`;

const UpsertedSchema = AgentRecordSchema.extend({ inserted: z.boolean() });

/** Where a grant stands now: its generation, and whether its key is dead (revoked, or past its deadline). */
export const GrantStandingSchema = z.object({ id: z.number(), generation: z.number(), dead: z.boolean() });
export type GrantStanding = z.infer<typeof GrantStandingSchema>;

export type AgentChanges = {
  /** The new stored sector list; undefined leaves it as it is. */
  sectors?: string[];
  /** The new deadline (ISO), null for none; undefined leaves it as it is. */
  expiresAt?: string | null;
};

/** The prepared statement's name of the key lookup on the direct reads (one text, so one name). */
const KEY_LOOKUP_STATEMENT = 'pcg_agent_by_key_hash';

/**
 * SQL for the `agents` table, scoped to the single operator. Every statement that changes a grant bumps
 * `generation` in the same statement, so a change and its bump commit together (design 4.7). `direct` is
 * the database's direct pool (db/direct-reads.ts), for the key lookup; a transaction has none, and then
 * the lookup goes through `db` as every other statement does.
 */
export function createAgentQueries(db: CommonQueryMethods, direct?: DirectPool) {
  return {
    /**
     * The only read that includes the key hash: the resolver compares it. It runs on every modern `/mcp`
     * request and every mirror call (design 8.1: the key is resolved each time), so given the direct pool it
     * goes through it as a named prepared statement: no slonik per-query path, and Postgres parses and
     * plans the text once per connection. The key hash is unique, so there is at most one row.
     */
    async findByKeyHash(keyHash: Buffer): Promise<AgentRow | null> {
      const query = sql.fragment`
        SELECT ${RECORD_COLUMNS}, key_hash AS "keyHash"
        FROM agents WHERE user_id = ${OPERATOR_USER_ID} AND key_hash = ${sql.binary(keyHash)}`;
      if (!direct) return db.maybeOne(sql.type(AgentRowSchema)`${query}`);
      const [row] = await direct.read({ sql: query.sql, values: query.values, name: KEY_LOOKUP_STATEMENT });
      return row === undefined ? null : AgentRowSchema.parse(row);
    },

    /** The generation of a grant that still stands (not revoked), or null; the MCP initialize re-check. */
    async liveGeneration(agentId: number): Promise<number | null> {
      return db.maybeOneFirst(sql.type(z.object({ generation: z.number() }))`
        SELECT generation FROM agents WHERE user_id = ${OPERATOR_USER_ID} AND id = ${agentId} AND revoked_at IS NULL`);
    },

    /**
     * The standing of each grant by id (the row's identity, never reused), for the gateway's re-check of
     * live sessions. A deleted grant has no row, so one re-created under the same name is not mistaken for it.
     */
    async standings(agentIds: readonly number[]): Promise<readonly GrantStanding[]> {
      return db.any(sql.type(GrantStandingSchema)`
        SELECT id, generation, (revoked_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= now())) AS dead
        FROM agents WHERE user_id = ${OPERATOR_USER_ID} AND id = ANY(${sql.array(agentIds, 'int8')})`);
    },

    async findByName(name: string): Promise<AgentRecord | null> {
      return db.maybeOne(sql.type(AgentRecordSchema)`
        SELECT ${RECORD_COLUMNS} FROM agents WHERE user_id = ${OPERATOR_USER_ID} AND name = ${name}`);
    },

    async list(): Promise<readonly AgentRecord[]> {
      return db.any(sql.type(AgentRecordSchema)`
        SELECT ${RECORD_COLUMNS} FROM agents WHERE user_id = ${OPERATOR_USER_ID} ORDER BY created_at, id`);
    },

    /**
     * Creates the grant, or replaces the one under that name (spec 5 rule 7: a rotation): new key, the
     * given sectors and deadline, revocation lifted. `inserted` tells the two apart (xmax is 0 only on
     * a freshly inserted row version).
     */
    async upsert(input: { name: string; keyHash: Buffer; sectors: string[]; expiresAt: string | null }) {
      const row = await db.one(sql.type(UpsertedSchema)`
        INSERT INTO agents (user_id, name, key_hash, sectors, expires_at)
        VALUES (${OPERATOR_USER_ID}, ${input.name}, ${sql.binary(input.keyHash)},
                ${sql.array(input.sectors, 'text')}, ${input.expiresAt}::timestamptz)
        ON CONFLICT (user_id, name) DO UPDATE SET
          key_hash = EXCLUDED.key_hash, sectors = EXCLUDED.sectors, expires_at = EXCLUDED.expires_at,
          revoked_at = NULL, generation = agents.generation + 1, updated_at = now()
        RETURNING ${RECORD_COLUMNS}, (xmax = 0) AS inserted`);
      const { inserted, ...record } = row;
      return { record, inserted };
    },

    /** A new key for a grant that is not revoked; null when there is no such grant. */
    async replaceKey(name: string, keyHash: Buffer): Promise<AgentRecord | null> {
      return db.maybeOne(sql.type(AgentRecordSchema)`
        UPDATE agents SET key_hash = ${sql.binary(keyHash)}, generation = generation + 1, updated_at = now()
        WHERE user_id = ${OPERATOR_USER_ID} AND name = ${name} AND revoked_at IS NULL
        RETURNING ${RECORD_COLUMNS}`);
    },

    async update(name: string, changes: AgentChanges): Promise<AgentRecord | null> {
      const assignments = [sql.fragment`generation = generation + 1`, sql.fragment`updated_at = now()`];
      if (changes.sectors !== undefined) assignments.push(sql.fragment`sectors = ${sql.array(changes.sectors, 'text')}`);
      if (changes.expiresAt !== undefined) assignments.push(sql.fragment`expires_at = ${changes.expiresAt}::timestamptz`);
      return db.maybeOne(sql.type(AgentRecordSchema)`
        UPDATE agents SET ${sql.join(assignments, sql.fragment`, `)}
        WHERE user_id = ${OPERATOR_USER_ID} AND name = ${name}
        RETURNING ${RECORD_COLUMNS}`);
    },

    /** Revokes a grant that is not revoked yet; null when there is no such grant. */
    async revoke(name: string): Promise<AgentRecord | null> {
      return db.maybeOne(sql.type(AgentRecordSchema)`
        UPDATE agents SET revoked_at = now(), generation = generation + 1, updated_at = now()
        WHERE user_id = ${OPERATOR_USER_ID} AND name = ${name} AND revoked_at IS NULL
        RETURNING ${RECORD_COLUMNS}`);
    },

    async remove(name: string): Promise<boolean> {
      const removed = await db.maybeOne(sql.type(z.object({ id: z.number() }))`
        DELETE FROM agents WHERE user_id = ${OPERATOR_USER_ID} AND name = ${name} RETURNING id`);
      return removed !== null;
    },
  };
}

export type AgentQueries = ReturnType<typeof createAgentQueries>;
