import { openCredentials, sealCredentials } from '@pcg/shared/crypto';
import { sql, type DatabasePool } from '@pcg/shared/db';
import type { CommonQueryMethods } from 'slonik';
import type { Logger } from '@pcg/shared/logger';
import { findProvider, realOrigins, type RebaseUrl } from '@pcg/shared/providers';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import {
  SourceAppCredentialsError,
  SourceAuthError,
  SourceRateLimitedError,
  SourceRejectedError,
  SourceUnavailableError,
  type SourceError,
} from '../connectors/kit/source-errors.ts';
import { DEFAULT_RETRY_AFTER_MS } from '../connectors/kit/source-verdict.ts';
import { loadProviderApp, OAuthCredentialsSchema, ProviderUnreachableError, requestToken, type OAuthCredentials } from './oauth-client.ts';

/** The provider refused the refresh (`invalid_grant`…): the grant is gone; every connection of the sign-in now needs sign-in. */
export class SignInRefusedError extends SourceAuthError {}

/** The provider could not renew the access now (unreachable, 408, 5xx, busy): nothing changed; retry later. */
export class RefreshUnavailableError extends SourceUnavailableError {}

/** A token this close to its expiry is refreshed rather than used. */
const EXPIRY_MARGIN_MS = 60_000;

export type TokenRefresherDeps = {
  db: DatabasePool;
  credentialsKey: Buffer;
  log: Logger;
  /** Timeout of the request to the provider's token endpoint, in milliseconds. */
  requestTimeoutMs: number;
  /** Points a provider's real address at its configured stand-in (`<PROVIDER>_BASE_URL`); default none. */
  rebaseUrl?: RebaseUrl;
};

/**
 * Token refresh in one place (design 7.1), for the connector context of the sync and live runners.
 *
 * `refreshAccessToken(signInId, { rejected })` returns the sign-in's current OAuth credentials,
 * refreshing them at the provider only when needed: when `rejected` (the access token the source just
 * refused with a 401) is still the stored one, or, without `rejected`, when the stored token is within
 * a minute of its expiry. It runs under a Postgres advisory lock per sign-in, inside the transaction
 * that writes the rotated tokens back sealed, so two connections of one sign-in refreshing at once
 * cause one refresh: the second waits, then finds the token it was refused already replaced.
 *
 * Throws `SignInRefusedError` (a `SourceAuthError`) when the grant is gone: the sign-in and all its
 * connections are then "needs sign-in". Throws `SourceAppCredentialsError` when the provider refuses the
 * gateway's application credentials (the grant is kept); a `SourceRateLimitedError` for a 429 (its
 * `Retry-After` honoured) and a `RefreshUnavailableError` for an unreachable or busy token endpoint
 * (nothing changes; retried); a `SourceRejectedError` for any other refusal of the request.
 */
export function createTokenRefresher(deps: TokenRefresherDeps) {
  async function refreshAccessToken(signInId: string, options: { rejected?: string } = {}): Promise<OAuthCredentials> {
    const outcome = await deps.db.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${`refresh:${signInId}`}, 0))`);
      const signIns = createSignInQueries(tx);
      const signIn = await signIns.get(signInId);
      const sealed = await signIns.sealed(signInId);
      if (!signIn || !sealed) return { kind: 'refused', message: 'the sign-in no longer exists' } as const;
      if (signIn.status !== 'active') return { kind: 'refused', message: signIn.last_error ?? 'the sign-in needs to be renewed' } as const;
      const current = OAuthCredentialsSchema.parse(openCredentials(deps.credentialsKey, sealed, signInId));
      const stillValid = options.rejected === undefined ? current.expiresAt === null || current.expiresAt - Date.now() > EXPIRY_MARGIN_MS : current.accessToken !== options.rejected;
      if (stillValid) return { kind: 'current', credentials: current } as const;

      const provider = findProvider(signIn.provider);
      const name = provider?.displayName ?? signIn.provider;
      if (!provider?.oauth || current.refreshToken === null) {
        const message = `${name} gave no way to renew the access`;
        await signIns.grantGone(signInId, message);
        return { kind: 'refused', message: message } as const;
      }
      const app = await loadProviderApp(tx, deps.credentialsKey, signIn.provider);
      if (!app) return appRefused(tx, signInId, `${name}'s application credentials are not saved: save its client ID and secret in Settings › Provider applications`);
      const answer = await requestToken(
        (deps.rebaseUrl ?? realOrigins)(provider.oauth.tokenUrl),
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
      ).catch((error: unknown) => {
        if (error instanceof ProviderUnreachableError) return unavailable(error, name);
        throw error;
      });
      if (!('ok' in answer)) return { kind: 'failed', error: answer } as const;
      if (!answer.ok) {
        switch (answer.refusal) {
          case 'grant_gone': {
            const message = `${name} refused to renew the access (${answer.error})`;
            await signIns.grantGone(signInId, message);
            return { kind: 'refused', message: message } as const;
          }
          case 'app_refused':
            return appRefused(
              tx,
              signInId,
              `${name} refused the gateway's application credentials (${answer.error}): replace its client ID and secret in Settings › Provider applications; signing in again will not help`,
            );
          case 'rejected':
            return { kind: 'failed', error: new SourceRejectedError(`${name} refused the request to renew the access (${answer.error})`, answer.status, answer.error) } as const;
        }
      }
      await signIns.refreshed(signInId, sealCredentials(deps.credentialsKey, answer.credentials, signInId));
      return { kind: 'refreshed', credentials: answer.credentials } as const;
    });
    if (outcome.kind === 'refused') {
      deps.log.warn({ signInId }, 'the provider refused the refresh; the sign-in needs to be renewed');
      throw new SignInRefusedError(outcome.message);
    }
    if (outcome.kind === 'failed') {
      deps.log.warn({ signInId, errName: outcome.error.name, reason: outcome.error.message }, 'the access could not be renewed');
      throw outcome.error;
    }
    if (outcome.kind === 'refreshed') deps.log.info({ signInId }, 'access token refreshed');
    return outcome.credentials;
  }

  async function appRefused(db: CommonQueryMethods, signInId: string, message: string) {
    await createSignInQueries(db).appRefused(signInId, message);
    return { kind: 'failed', error: new SourceAppCredentialsError(message) } as const;
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
