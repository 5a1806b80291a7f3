import type { CommonQueryMethods } from 'slonik';
import type { DirectPool } from '../db/index.ts';
import type { Logger } from '../logger/index.ts';
import { hashAgentKey, isWellFormedAgentKey, keyHashesEqual, parseBearer } from './agent-key-fns.ts';
import { createAgentQueries } from './agents-queries.ts';
import { agentStatus, resolveSectors } from './grants-fns.ts';
import type { ResolveKeyResult } from './grants-types.ts';

export type KeyResolverDeps = {
  db: CommonQueryMethods;
  /** The database's direct pool, the key lookup's way to its row (it runs on every key presented). */
  direct: DirectPool;
  /** Refusals are logged at debug level, with the agent name when there is one, never the key. */
  log?: Logger;
};

/**
 * The one key resolver every surface uses (MCP `initialize`, the read mirror, the bridge's sign-in):
 * hash, look up, compare in constant time, then check revocation and the deadline against `now`.
 */
export function createKeyResolver({ db, direct, log }: KeyResolverDeps) {
  const queries = createAgentQueries(db, direct);

  async function resolveKey(key: string, now: Date = new Date()): Promise<ResolveKeyResult> {
    if (!isWellFormedAgentKey(key)) {
      log?.debug({ reason: 'unknown agent', malformed: true }, 'agent key refused');
      return { ok: false, reason: 'unknown agent', malformed: true };
    }
    const keyHash = hashAgentKey(key);
    const row = await queries.findByKeyHash(keyHash);
    if (!row || !keyHashesEqual(row.keyHash, keyHash)) {
      log?.debug({ reason: 'unknown agent' }, 'agent key refused');
      return { ok: false, reason: 'unknown agent' };
    }
    const status = agentStatus(row, now);
    if (status !== 'active') {
      log?.debug({ agent: row.name, reason: status }, 'agent key refused');
      return { ok: false, reason: status };
    }
    return {
      ok: true,
      grant: {
        agentId: row.id,
        agentName: row.name,
        sectors: resolveSectors(row.sectors),
        expiresAt: row.expiresAt,
        generation: row.generation,
      },
    };
  }

  return {
    resolveKey,

    /**
     * Resolves an `Authorization` header value. No header, another scheme, or a `Bearer` with no key:
     * `missing`. A token not shaped like an agent key: `unknown agent` with `malformed: true`.
     */
    async resolveAuthorization(headerValue: string | undefined, now: Date = new Date()): Promise<ResolveKeyResult> {
      const credential = parseBearer(headerValue);
      if (credential.kind === 'none') return { ok: false, reason: 'missing' };
      return resolveKey(credential.token, now);
    },
  };
}

export type KeyResolver = ReturnType<typeof createKeyResolver>;
