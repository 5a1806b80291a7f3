import type { Job } from 'bullmq';
import { sealCredentials } from '@pcg/shared/crypto';
import type { DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import { findProvider, realOrigins, rebaserFor, type RebaseUrl } from '@pcg/shared/providers';
import type { OAuthExchangeJob, SignInJobResult, SyncProducer } from '@pcg/shared/queues';
import { applyGrant, DEMO_MARK_FIXED, NO_SECTORS_GRANTED, OTHER_ACCOUNT } from '@pcg/shared/sign-ins';
import { nameAccount } from './account-name.ts';
import { loadProviderApp, ProviderUnreachableError, requestToken } from './oauth-client.ts';

export type OAuthExchangeDeps = {
  db: DatabasePool;
  credentialsKey: Buffer;
  sync: Pick<SyncProducer, 'schedule'>;
  log: Logger;
  /** Timeout of one request to the provider, in milliseconds. */
  requestTimeoutMs: number;
  /** Points a provider's real address at its configured stand-in (`<PROVIDER>_BASE_URL`); default none. */
  rebaseUrl?: RebaseUrl;
};

type Refused = Extract<SignInJobResult, { status: 'refused' }>;
const refused = (reason: Refused['reason'], message: string): Refused => ({ status: 'refused', reason, message });

/**
 * Finishes an `oauth` sign-in on the sync-worker (design 7.1): exchanges the code (with the PKCE
 * verifier) for tokens, asks the provider which account signed in, and lets the GRANTED scope list
 * decide the connections (spec 2.5). Never throws: every end is an answer the Console shows. The code,
 * the tokens and the client secret appear in no log line and no answer.
 */
export function createOAuthExchangeRunner(deps: OAuthExchangeDeps) {
  return async function runExchange(job: Job, data: OAuthExchangeJob): Promise<SignInJobResult> {
    const log = deps.log.child({ jobId: job.id, provider: data.provider });
    const rebase = rebaserFor(data.demoEndpoints, deps.rebaseUrl ?? realOrigins);
    const provider = findProvider(data.provider);
    const oauth = provider?.oauth;
    if (!provider || provider.signIn !== 'oauth' || !oauth) return refused('not_configured', `'${data.provider}' does not sign in with OAuth`);
    if (Date.now() > data.deadline) return refused('unreachable', 'the sign-in expired before the sync-worker took it; start it again');
    try {
      const app = await loadProviderApp(deps.db, deps.credentialsKey, provider.kind);
      if (!app) return refused('not_configured', `save ${provider.displayName}'s application credentials first`);
      const answer = await requestToken(
        rebase(oauth.tokenUrl),
        {
          grant_type: 'authorization_code',
          code: data.code,
          redirect_uri: data.redirectUri,
          client_id: app.clientId,
          client_secret: app.clientSecret,
          ...(data.codeVerifier ? { code_verifier: data.codeVerifier } : {}),
        },
        deps.requestTimeoutMs,
      );
      if (!answer.ok) {
        log.warn({ error: answer.error }, 'provider refused the sign-in code');
        if (answer.refusal === 'app_refused') {
          // A new sign-in with the same application credentials would be refused the same way.
          return refused('not_configured', `${provider.displayName} refused the application credentials saved in Settings (${answer.error}): replace its client ID and secret in Settings › Provider applications, then start the sign-in again`);
        }
        return refused('provider_refused', `${provider.displayName} refused the sign-in (${answer.error}); start it again`);
      }
      // RFC 6749 5.1: a token answer without `scope` grants exactly what was asked.
      const grantedScopes = answer.scope === undefined ? [...oauth.scopes] : answer.scope.split(' ').filter(Boolean);
      const sectors = oauth.sectorsOf(grantedScopes);
      if (sectors.length === 0) return refused('no_sectors', NO_SECTORS_GRANTED);
      const account = await nameAccount(oauth.account, { accessToken: answer.credentials.accessToken, idToken: answer.idToken }, { clientId: app.clientId, rebase, timeoutMs: deps.requestTimeoutMs });
      const outcome = await applyGrant(deps.db, {
        provider,
        signInId: data.signInId,
        accountId: account.id,
        grantedScopes,
        sectors,
        ...(data.demoEndpoints ? { demoEndpoints: data.demoEndpoints } : {}),
        seal: (signInId) => sealCredentials(deps.credentialsKey, { ...answer.credentials, scopes: grantedScopes, ...(account.name ? { accountName: account.name } : {}) }, signInId),
      });
      if (outcome.outcome === 'refused') {
        return refused(outcome.message === OTHER_ACCOUNT || outcome.message === DEMO_MARK_FIXED ? 'other_account' : outcome.message === NO_SECTORS_GRANTED ? 'no_sectors' : 'provider_refused', outcome.message);
      }
      // After the commit: the first run of each scheduler is the first sync.
      for (const connection of outcome.active) {
        await deps.sync
          .schedule(connection.id, connection.sync_interval_minutes ?? provider.defaultSyncIntervalMinutes ?? 60)
          .catch((error: unknown) => log.warn({ err: error, connectionId: connection.id }, 'could not schedule the new connection; the reconciler will'));
      }
      log.info({ signInId: outcome.signInId, renewed: outcome.renewed, sectors, waiting: outcome.waiting }, 'sign-in completed');
      return {
        status: 'signed_in',
        signInId: outcome.signInId,
        renewed: outcome.renewed,
        connectionIds: outcome.active.map((connection) => connection.id),
        grantedSectors: [...sectors],
        waiting: outcome.waiting,
      };
    } catch (error) {
      if (error instanceof ProviderUnreachableError) return refused('unreachable', `${error.message}; start the sign-in again`);
      log.error({ errName: (error as Error).name }, 'sign-in failed in the sync-worker');
      return refused('unreachable', 'the sign-in failed in the sync-worker; see its log');
    }
  };
}
