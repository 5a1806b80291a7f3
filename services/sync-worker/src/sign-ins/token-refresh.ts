import { setTimeout as delay } from 'node:timers/promises';
import { openCredentials, sealCredentials } from '@pcg/shared/crypto';
import { sql, type DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import { findProvider, realOrigins, rebaserFor, type RebaseUrl } from '@pcg/shared/providers';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import type { DatabasePoolConnection } from 'slonik';
import {
  SourceAppCredentialsError,
  SourceAuthError,
  SourceRateLimitedError,
  SourceRejectedError,
  SourceUnavailableError,
  type SourceError,
} from '../connectors/kit/source-errors.ts';
import { DEFAULT_RETRY_AFTER_MS } from '../connectors/kit/source-verdict.ts';
import { loadProviderApp, OAuthCredentialsSchema, ProviderUnreachableError, requestToken, type OAuthCredentials, type TokenAnswer } from './oauth-client.ts';

/** The grant is gone (`invalid_grant`…, or renewed tokens that could not be stored): every connection of the sign-in now needs sign-in. */
export class GrantLostError extends SourceAuthError {}

/** The provider could not renew the access now (unreachable, 408, 5xx, busy): nothing changed; retry later. */
export class RefreshUnavailableError extends SourceUnavailableError {}

/** A token this close to its expiry is refreshed rather than used. */
const EXPIRY_MARGIN_MS = 60_000;
/** Waits before the second, third and fourth try of storing renewed tokens. */
const WRITE_RETRY_DELAYS_MS = [100, 400, 1_600];

export type TokenRefresherDeps = {
  db: DatabasePool;
  credentialsKey: Buffer;
  log: Logger;
  /** Timeout of the request to the provider's token endpoint, in milliseconds. */
  requestTimeoutMs: number;
  /** Points a provider's real address at its configured stand-in (`<PROVIDER>_BASE_URL`); default none. */
  rebaseUrl?: RebaseUrl;
};

type Outcome =
  | { kind: 'current' | 'refreshed'; credentials: OAuthCredentials }
  | { kind: 'refused'; message: string }
  | { kind: 'failed'; error: SourceError };

const lockKey = (signInId: string) => sql.fragment`hashtextextended(${`refresh:${signInId}`}, 0)`;

/**
 * Token refresh in one place (design 7.1), for the connector context of the sync and live runners.
 *
 * `refreshAccessToken(signInId, { rejected })` returns the sign-in's current OAuth credentials,
 * refreshing them at the provider only when needed: when `rejected` (the access token the source just
 * refused with a 401) is still the stored one, or, without `rejected`, when the stored token is within
 * a minute of its expiry.
 *
 * The provider is called under a session-level Postgres advisory lock per sign-in, held on one pooled
 * connection and never inside a transaction (the pool may run a transaction's callback again, which
 * would present a refresh token the provider already rotated out). Two workers refreshing one sign-in
 * therefore cause one refresh: the second waits for the lock, re-reads the stored tokens and uses them.
 * The renewed tokens are then written in a short transaction of their own, tried again if it fails;
 * when it never succeeds after the provider rotated the refresh token, the grant is lost, and the
 * sign-in and its connections are marked needs sign-in with that reason, and logged.
 *
 * Throws `GrantLostError` (a `SourceAuthError`) when the grant is gone; `SourceAppCredentialsError`
 * when the provider refuses the gateway's application credentials (the grant is kept); a
 * `SourceRateLimitedError` for a 429 (its `Retry-After` honoured) and a `RefreshUnavailableError` for an
 * unreachable or busy token endpoint (nothing changes; retried); a `SourceRejectedError` for any other
 * refusal of the request.
 */
export function createTokenRefresher(deps: TokenRefresherDeps) {
  /** Runs `work` holding the sign-in's lock on this connection. A connection that fails is destroyed by the pool, which ends its session and the lock. */
  async function underLock(connection: DatabasePoolConnection, signInId: string, work: () => Promise<Outcome>): Promise<Outcome> {
    await connection.query(sql.unsafe`SELECT pg_advisory_lock(${lockKey(signInId)})`);
    let outcome: Outcome;
    try {
      outcome = await work();
    } catch (error) {
      await connection.query(sql.unsafe`SELECT pg_advisory_unlock(${lockKey(signInId)})`).catch(() => undefined);
      throw error;
    }
    // The pool resets nothing when a connection goes back (create-database.ts): the lock must be let go here.
    await connection.query(sql.unsafe`SELECT pg_advisory_unlock(${lockKey(signInId)})`);
    return outcome;
  }

  async function refreshHeld(connection: DatabasePoolConnection, signInId: string, rejected: string | undefined): Promise<Outcome> {
    const signIns = createSignInQueries(connection);
    const signIn = await signIns.get(signInId);
    const sealed = await signIns.sealed(signInId);
    if (!signIn || !sealed) return { kind: 'refused', message: 'the sign-in no longer exists' };
    if (signIn.status !== 'active') return { kind: 'refused', message: signIn.last_error ?? 'the sign-in needs to be renewed' };
    const current = OAuthCredentialsSchema.parse(openCredentials(deps.credentialsKey, sealed, signInId));
    const stillValid = rejected === undefined ? current.expiresAt === null || current.expiresAt - Date.now() > EXPIRY_MARGIN_MS : current.accessToken !== rejected;
    if (stillValid) return { kind: 'current', credentials: current };

    const provider = findProvider(signIn.provider);
    const name = provider?.displayName ?? signIn.provider;
    if (!provider?.oauth || current.refreshToken === null) return grantGone(connection, signInId, `${name} gave no way to renew the access`);
    const app = await loadProviderApp(connection, deps.credentialsKey, signIn.provider);
    if (!app) return appRefused(connection, signInId, `${name}'s application credentials are not saved: save its client ID and secret in Settings › Provider applications`);

    let answer: TokenAnswer;
    try {
      answer = await requestToken(
        rebaserFor(signIn.demo_endpoints, deps.rebaseUrl ?? realOrigins)(provider.oauth.tokenUrl),
        {
          ...provider.oauth.refreshParams,
          grant_type: 'refresh_token',
          refresh_token: current.refreshToken,
          client_id: app.clientId,
          client_secret: app.clientSecret,
          ...(provider.oauth.scopeOnRefresh ? { scope: provider.oauth.scopes.join(' ') } : {}),
        },
        deps.requestTimeoutMs,
        current,
      );
    } catch (error) {
      if (error instanceof ProviderUnreachableError) return { kind: 'failed', error: unavailable(error, name) };
      throw error;
    }
    if (!answer.ok) {
      switch (answer.refusal) {
        case 'grant_gone':
          return grantGone(connection, signInId, `${name} refused to renew the access (${answer.error})`);
        case 'app_refused':
          return appRefused(
            connection,
            signInId,
            `${name} refused the gateway's application credentials (${answer.error}): replace its client ID and secret in Settings › Provider applications; signing in again will not help`,
          );
        case 'rejected':
          return { kind: 'failed', error: new SourceRejectedError(`${name} refused the request to renew the access (${answer.error})`, answer.status, answer.error) };
      }
    }
    if (await storeRenewed(connection, signInId, answer.credentials)) return { kind: 'refreshed', credentials: answer.credentials };
    if (answer.credentials.refreshToken === current.refreshToken) {
      // Not rotated: the stored refresh token still works, so only this access token is not kept.
      deps.log.warn({ signInId }, 'the renewed access token could not be stored; the stored refresh token still works');
      return { kind: 'refreshed', credentials: answer.credentials };
    }
    return lostRotation(signInId, `${name} renewed the access, but the gateway could not store the new tokens and the old ones no longer work`);
  }

  /** The renewed tokens, written back sealed in a short transaction of their own; false when no try succeeded. */
  async function storeRenewed(connection: DatabasePoolConnection, signInId: string, credentials: OAuthCredentials): Promise<boolean> {
    const sealed = sealCredentials(deps.credentialsKey, credentials, signInId);
    for (let attempt = 0; ; attempt += 1) {
      try {
        await connection.transaction((tx) => createSignInQueries(tx).refreshed(signInId, sealed));
        return true;
      } catch (error) {
        const wait = WRITE_RETRY_DELAYS_MS[attempt];
        // The error's name and code only: a database error may quote the statement's values.
        deps.log.warn({ signInId, attempt: attempt + 1, errName: (error as Error).name, code: (error as { code?: unknown }).code, retrying: wait !== undefined }, 'could not store the renewed tokens');
        if (wait === undefined) return false;
        await delay(wait);
      }
    }
  }

  /** Renewed tokens lost after the provider rotated: logged first, so the log says it even if the database refuses this write too. */
  async function lostRotation(signInId: string, message: string): Promise<Outcome> {
    deps.log.error({ signInId, status: 'needs_sign_in', reason: message }, 'the renewed tokens were lost; the sign-in needs to be renewed');
    await deps.db
      .transaction((tx) => createSignInQueries(tx).grantGone(signInId, message))
      .catch((error: unknown) => deps.log.error({ signInId, errName: (error as Error).name }, 'could not mark the sign-in as needing sign-in'));
    return { kind: 'refused', message };
  }

  async function grantGone(connection: DatabasePoolConnection, signInId: string, message: string): Promise<Outcome> {
    await connection.transaction((tx) => createSignInQueries(tx).grantGone(signInId, message));
    return { kind: 'refused', message };
  }

  async function appRefused(connection: DatabasePoolConnection, signInId: string, message: string): Promise<Outcome> {
    await createSignInQueries(connection).appRefused(signInId, message);
    return { kind: 'failed', error: new SourceAppCredentialsError(message) };
  }

  async function refreshAccessToken(signInId: string, options: { rejected?: string } = {}): Promise<OAuthCredentials> {
    const outcome = await deps.db.connect((connection) => underLock(connection, signInId, () => refreshHeld(connection, signInId, options.rejected)));
    switch (outcome.kind) {
      case 'refused':
        deps.log.warn({ signInId }, 'the provider refused the refresh; the sign-in needs to be renewed');
        throw new GrantLostError(outcome.message);
      case 'failed':
        deps.log.warn({ signInId, errName: outcome.error.name, reason: outcome.error.message }, 'the access could not be renewed');
        throw outcome.error;
      case 'refreshed':
        deps.log.info({ signInId }, 'access token refreshed');
        return outcome.credentials;
      case 'current':
        return outcome.credentials;
    }
  }

  return { refreshAccessToken };
}

/** A token endpoint that could not answer now: a 429 waits its `Retry-After` (the queue's rate limit), the rest are retried with backoff. */
function unavailable(error: ProviderUnreachableError, name: string): SourceError {
  const message = `${name} could not renew the access now (${error.message})`;
  if (error.rateLimited) return new SourceRateLimitedError(message, error.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS);
  return new RefreshUnavailableError(message, error.retryAfterMs);
}

export type TokenRefresher = ReturnType<typeof createTokenRefresher>;
