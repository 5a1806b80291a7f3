import type { DatabasePool, DatabaseTransactionConnection } from 'slonik';
import { isPgText, PG_VALUE_RULES } from '@pcg/shared/validation';
import { resourceMatches } from './authorize-request.ts';
import { ACCESS_TOKEN_SECONDS, type BridgeEndpoints } from './bridge-endpoints.ts';
import { invalidClient, invalidGrant, invalidRequest, invalidTarget, unsupportedGrantType, type OAuthError } from './bridge-errors.ts';
import { createBridgeQueries, type BridgeQueries } from './bridge-queries.ts';
import { generateBridgeSecret, hashBridgeSecret, openReplay, pkceVerifierMatches, sealReplay } from './bridge-secrets.ts';

/** A refresh token lives this long after it is issued, and never past its key's expiry; default 30 days. */
export const REFRESH_TOKEN_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000;

/** The token response of RFC 6749 5.1; no field is ever null. */
export type TokenAnswer = { access_token: string; token_type: 'Bearer'; expires_in: number; refresh_token: string; scope?: string };

/** What a successful grant reports for the audit row (spec 6: `grant` and `clientId` in args). */
export type TokenIssued = {
  answer: TokenAnswer;
  agentName: string;
  clientId: string;
  grant: 'authorization_code' | 'refresh_token';
  /** Set when the answer is the one given moments ago, replayed within the grace. */
  replayed?: true;
};

type Sealed = { access_token: string; refresh_token: string; accessExpiresAt: string; scope?: string };

export type TokenServiceDeps = {
  db: DatabasePool;
  /** How long a just-rotated refresh token may be replayed for the same answer; 0 (the default) is off. */
  replayGraceMs: number;
  /** Called after a chain was revoked for reuse, to end the agent's live sessions on every gateway. */
  onChainRevoked?(agentName: string): Promise<void>;
  now?: () => Date;
};

/** Every parameter must be a single string (RFC 6749 3.2: none may be sent twice) that Postgres can hold. */
function param(body: Record<string, unknown>, name: string, required: true): string;
function param(body: Record<string, unknown>, name: string, required?: false): string | undefined;
function param(body: Record<string, unknown>, name: string, required = false): string | undefined {
  const value = body[name];
  if (value === undefined || value === '') {
    if (required) throw invalidRequest(`${name} is required`);
    return undefined;
  }
  if (typeof value !== 'string') throw invalidRequest(`${name} must be sent once, as a string`);
  if (!isPgText(value)) throw invalidRequest(`${name} ${PG_VALUE_RULES.text}`);
  return value;
}

type Mismatch = { kind: 'mismatch'; reason: string };

/** Thrown inside a transaction to undo its writes and still hand the refusal out of it. */
class Rollback extends Error {
  readonly outcome: Mismatch;
  constructor(outcome: Mismatch) {
    super('rolled back');
    this.outcome = outcome;
  }
}

/** Runs `work` in a transaction; a `Rollback` undoes it and its refusal is returned instead. */
async function inTransaction<T>(db: DatabasePool, work: (tx: DatabaseTransactionConnection) => Promise<T>): Promise<T | Mismatch> {
  try {
    return await db.transaction(work);
  } catch (error) {
    if (error instanceof Rollback) return error.outcome;
    throw error;
  }
}

const cheap = (error: OAuthError, reason: string) => error.recorded({ reason, cheap: true });

/** Why an agent no longer backs a chain, or null when it does. */
function agentRefusal(agent: { revokedAt: string | null; expiresAt: string | null; keyCurrent: boolean }, now: Date): string | null {
  if (agent.revokedAt !== null) return 'the agent was revoked';
  if (!agent.keyCurrent) return "the agent's key was rotated after this sign-in; sign in again with the new key";
  if (agent.expiresAt !== null && now.getTime() >= Date.parse(agent.expiresAt)) return "the agent's key has expired";
  return null;
}

/**
 * POST /token: the authorization code and refresh grants (spec 3.3, 4.3). Every pair is an access token
 * of 3600 s and a refresh token that rotates on use; neither outlives the key's expiry. A rotated-out
 * refresh token presented again revokes its whole chain, unless the optional replay grace applies.
 */
export function createTokenService(deps: TokenServiceDeps) {
  const now = deps.now ?? (() => new Date());

  async function issuePair(queries: BridgeQueries, chainId: string, keyExpiresAt: string | null, scope: string | null, at: Date) {
    const ceiling = keyExpiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(keyExpiresAt);
    const accessExpiresAt = new Date(Math.min(at.getTime() + ACCESS_TOKEN_SECONDS * 1000, ceiling)).toISOString();
    const refreshExpiresAt = new Date(Math.min(at.getTime() + REFRESH_TOKEN_LIFETIME_MS, ceiling)).toISOString();
    const sealed: Sealed = {
      access_token: generateBridgeSecret('accessToken'),
      refresh_token: generateBridgeSecret('refreshToken'),
      accessExpiresAt,
      ...(scope === null ? {} : { scope }),
    };
    await queries.insertTokens({
      chainId,
      accessHash: hashBridgeSecret(sealed.access_token),
      accessExpiresAt,
      refreshHash: hashBridgeSecret(sealed.refresh_token),
      refreshExpiresAt,
    });
    return sealed;
  }

  function toAnswer(sealed: Sealed, at: Date): TokenAnswer {
    const { accessExpiresAt, ...tokens } = sealed;
    return { ...tokens, token_type: 'Bearer', expires_in: Math.max(0, Math.floor((Date.parse(accessExpiresAt) - at.getTime()) / 1000)) };
  }

  async function exchangeCode(body: Record<string, unknown>, clientId: string, endpoints: BridgeEndpoints): Promise<TokenIssued> {
    const code = param(body, 'code', true);
    const verifier = param(body, 'code_verifier', true);
    const redirectUri = param(body, 'redirect_uri');
    const resource = param(body, 'resource');
    if (resource !== undefined && !resourceMatches(resource, endpoints)) throw invalidTarget(`resource must be ${endpoints.resource}`);
    const at = now();
    const codeHash = hashBridgeSecret(code);
    const outcome = await inTransaction(deps.db, async (tx) => {
      const queries = createBridgeQueries(tx);
      const row = await queries.consumeCode(codeHash);
      if (!row) {
        const spent = await queries.findCode(codeHash);
        if (!spent?.chainId) return { kind: 'refused' as const, reused: spent !== null, agentName: undefined };
        // RFC 6749 4.1.2: a code used twice revokes what its first use issued.
        await queries.revokeChain(spent.chainId, 'authorization code used twice');
        const agent = await queries.findAgent(spent.agentId, spent.agentKeyHash);
        return { kind: 'refused' as const, reused: true, agentName: agent?.name };
      }
      if (row.expired) return { kind: 'refused' as const, reused: false, agentName: undefined };
      // These refusals roll the consumption back: the code stays good for the client that holds its verifier.
      if (row.clientId !== clientId) throw new Rollback({ kind: 'mismatch', reason: 'token: code issued to another client' });
      if (redirectUri !== row.redirectUri) throw new Rollback({ kind: 'mismatch', reason: 'token: redirect_uri mismatch' });
      if (!pkceVerifierMatches(verifier, row.codeChallenge)) throw new Rollback({ kind: 'mismatch', reason: 'token: code_verifier mismatch' });
      if (row.resource !== endpoints.resource) throw new Rollback({ kind: 'mismatch', reason: 'token: resource changed since sign-in' });
      const agent = await queries.findAgent(row.agentId, row.agentKeyHash);
      const refusal = agent ? agentRefusal(agent, at) : 'the agent was deleted';
      if (!agent || refusal) return { kind: 'agent' as const, refusal, agentName: agent?.name };
      const chainId = await queries.insertChain({ ...row, codeHash });
      const sealed = await issuePair(queries, chainId, agent.expiresAt, row.scope, at);
      return { kind: 'issued' as const, sealed, agentName: agent.name };
    });
    switch (outcome.kind) {
      case 'refused':
        if (outcome.agentName) await deps.onChainRevoked?.(outcome.agentName);
        throw outcome.reused
          ? invalidGrant('the authorization code was already used; the tokens it gave were revoked').recorded({ reason: 'token: authorization code reused', cheap: false })
          : cheap(invalidGrant('the authorization code is unknown or expired'), 'token: unknown or expired code');
      case 'mismatch':
        throw cheap(invalidGrant('the authorization code does not match this client, redirect_uri or code_verifier'), outcome.reason);
      case 'agent':
        throw invalidGrant(outcome.refusal ?? 'the agent cannot sign in').recorded({ reason: `token: ${outcome.refusal}`, cheap: false, agentName: outcome.agentName });
      case 'issued':
        return { answer: toAnswer(outcome.sealed, at), agentName: outcome.agentName, clientId, grant: 'authorization_code' };
    }
  }

  async function refresh(body: Record<string, unknown>, clientId: string, endpoints: BridgeEndpoints): Promise<TokenIssued> {
    const token = param(body, 'refresh_token', true);
    const resource = param(body, 'resource');
    if (resource !== undefined && !resourceMatches(resource, endpoints)) throw invalidTarget(`resource must be ${endpoints.resource}`);
    const at = now();
    const outcome = await deps.db.transaction(async (tx) => {
      const queries = createBridgeQueries(tx);
      const row = await queries.findRefreshTokenForUpdate(hashBridgeSecret(token));
      if (!row || row.chainRevoked || Date.parse(row.tokenExpiresAt) <= at.getTime()) return { kind: 'unknown' as const };
      if (row.clientId !== clientId) return { kind: 'other-client' as const };
      if (row.rotatedAt !== null) {
        const withinGrace = deps.replayGraceMs > 0 && at.getTime() - Date.parse(row.rotatedAt) <= deps.replayGraceMs;
        const replayed = withinGrace && row.replaySealed ? (openReplay(token, row.replaySealed) as Sealed | null) : null;
        if (replayed) return { kind: 'replayed' as const, sealed: replayed, agentName: row.agentName };
        await queries.revokeChain(row.chainId, 'refresh token reused');
        return { kind: 'reused' as const, agentName: row.agentName };
      }
      if (row.resource !== endpoints.resource) return { kind: 'unknown' as const };
      const refusal = agentRefusal({ revokedAt: row.agentRevokedAt, expiresAt: row.agentExpiresAt, keyCurrent: row.keyCurrent }, at);
      if (refusal) return { kind: 'agent' as const, refusal, agentName: row.agentName };
      const sealed = await issuePair(queries, row.chainId, row.agentExpiresAt, row.scope, at);
      await queries.markRotated(hashBridgeSecret(token), deps.replayGraceMs > 0 ? sealReplay(token, sealed) : null);
      return { kind: 'issued' as const, sealed, agentName: row.agentName };
    });
    switch (outcome.kind) {
      case 'unknown':
        throw cheap(invalidGrant('the refresh token is unknown, expired or revoked; sign in again'), 'token: unknown or expired refresh token');
      case 'other-client':
        throw cheap(invalidGrant('the refresh token was issued to another client'), 'token: refresh token of another client');
      case 'replayed':
        return { answer: toAnswer(outcome.sealed, at), agentName: outcome.agentName, clientId, grant: 'refresh_token', replayed: true };
      case 'reused':
        await deps.onChainRevoked?.(outcome.agentName);
        throw invalidGrant('the refresh token was already used; every token of this sign-in is now revoked, sign in again').recorded({
          reason: 'token: refresh token reused, chain revoked',
          cheap: false,
          agentName: outcome.agentName,
        });
      case 'agent':
        throw invalidGrant(outcome.refusal).recorded({ reason: `token: ${outcome.refusal}`, cheap: false, agentName: outcome.agentName });
      case 'issued':
        return { answer: toAnswer(outcome.sealed, at), agentName: outcome.agentName, clientId, grant: 'refresh_token' };
    }
  }

  return {
    /** Runs the grant the body names for the client it names; throws an `OAuthError` on any refusal. */
    async exchange(body: Record<string, unknown>, findClient: (id: string) => Promise<unknown>, endpoints: BridgeEndpoints) {
      const grantType = param(body, 'grant_type', true);
      const clientId = param(body, 'client_id');
      if (clientId === undefined) throw cheap(invalidClient('client_id is required (public clients send it in the body)'), 'token: unknown client');
      if (!(await findClient(clientId))) throw cheap(invalidClient('this client is not registered; register it again'), 'token: unknown client');
      if (grantType === 'authorization_code') return exchangeCode(body, clientId, endpoints);
      if (grantType === 'refresh_token') return refresh(body, clientId, endpoints);
      throw unsupportedGrantType("grant_type must be 'authorization_code' or 'refresh_token'");
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
