import type { Job } from 'bullmq';
import { openCredentials, sealCredentials } from '@pcg/shared/crypto';
import { OPERATOR_USER_ID, type DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import { findProvider, isLinkProvider, realOrigins, rebaserFor, type DemoEndpoints, type LinkItemCredentials, type LinkProvider, type RebaseUrl } from '@pcg/shared/providers';
import type { LinkExchangeJob, LinkStartJob, LinkStartResult, SignInJobResult, SyncProducer } from '@pcg/shared/queues';
import { applyGrant, createSignInQueries, DEMO_MARK_FIXED, OTHER_ACCOUNT } from '@pcg/shared/sign-ins';
import { SourceAuthError, SourceError, SourceRejectedError } from '../connectors/kit/source-errors.ts';
import { linkApiOf, type LinkApi, type LinkApp } from './link-aggregators.ts';

export type LinkFlowDeps = {
  db: DatabasePool;
  credentialsKey: Buffer;
  sync: Pick<SyncProducer, 'schedule'>;
  log: Logger;
  requestTimeoutMs: number;
  rebaseUrl?: RebaseUrl;
  /** The aggregator application the operator saved for a provider kind; null when not saved. */
  loadApp: (kind: string) => Promise<LinkApp | null>;
};

type Refused = Extract<SignInJobResult, { status: 'refused' }>;
const refused = (reason: Refused['reason'], message: string): Refused => ({ status: 'refused', reason, message });

/** What an answer of the aggregator that was not a success tells the operator. */
function refusalOf(error: unknown, doing: string): Refused {
  if (error instanceof SourceRejectedError) return refused('provider_refused', `the bank aggregator refused to ${doing} (${error.detail}); check the application credentials and environment saved in the Console`);
  if (error instanceof SourceAuthError) return refused('provider_refused', error.message);
  if (error instanceof SourceError) return refused('unreachable', `${error.message}; start the sign-in again`);
  throw error;
}

/**
 * The `link` sign-in of the bank aggregator on the sync-worker (design 7.1: only it talks to a
 * source): `link_start` asks for a hosted link (in update mode for a sign-in to repair) whose
 * completion sends the browser back to the Console; `link_exchange` reads the finished session, trades
 * its public token for the item's access token and seals it on the sign-in (one item, one finance
 * connection), or, in update mode, checks that the bank's login is repaired and makes the sign-in
 * active again with every cached row kept. No token appears in a log line or an answer.
 */
export function createLinkRunners(deps: LinkFlowDeps) {
  async function prepare(kind: string, deadline: number, demoEndpoints?: DemoEndpoints): Promise<{ provider: LinkProvider; api: LinkApi } | Refused> {
    const provider = findProvider(kind);
    if (!isLinkProvider(provider)) return refused('not_configured', `'${kind}' does not sign in with a hosted link`);
    if (Date.now() > deadline) return refused('unreachable', 'the sign-in expired before the sync-worker took it; start it again');
    const app = await deps.loadApp(provider.kind);
    if (!app) return refused('not_configured', `save ${provider.displayName}'s application credentials (client id, secret, environment) first`);
    return { provider, api: linkApiOf(provider, { app, rebaseUrl: rebaserFor(demoEndpoints, deps.rebaseUrl ?? realOrigins), timeoutMs: deps.requestTimeoutMs }) };
  }

  async function itemCredentials(provider: LinkProvider, signInId: string): Promise<LinkItemCredentials | undefined> {
    const sealed = await createSignInQueries(deps.db).sealed(signInId);
    if (!sealed) return undefined;
    const parsed = provider.link.itemCredentials.safeParse(openCredentials(deps.credentialsKey, sealed, signInId));
    return parsed.success ? parsed.data : undefined;
  }

  async function linkStart(job: Job, data: LinkStartJob): Promise<LinkStartResult> {
    const ready = await prepare(data.provider, data.deadline, data.demoEndpoints);
    if ('status' in ready) return ready;
    let accessToken: string | undefined;
    if (data.signInId) {
      accessToken = (await itemCredentials(ready.provider, data.signInId))?.accessToken;
      if (!accessToken) return refused('provider_refused', `there is no ${ready.provider.displayName} sign-in to repair with that id`);
    }
    try {
      const token = await ready.api.createLinkToken({ userId: `operator-${OPERATOR_USER_ID}`, completionRedirect: data.completionRedirect, accessToken });
      if (!token.hosted_link_url) return refused('unreachable', 'the bank aggregator gave no hosted link address; start the sign-in again');
      deps.log.info({ jobId: job.id, updateMode: accessToken !== undefined }, 'hosted link opened');
      return { status: 'started', linkToken: token.link_token, hostedLinkUrl: token.hosted_link_url };
    } catch (error) {
      return refusalOf(error, 'open a hosted link');
    }
  }

  async function linkExchange(job: Job, data: LinkExchangeJob): Promise<SignInJobResult> {
    const log = deps.log.child({ jobId: job.id, provider: data.provider });
    const ready = await prepare(data.provider, data.deadline, data.demoEndpoints);
    if ('status' in ready) return ready;
    const { provider, api } = ready;
    try {
      const session = await api.linkResults(data.linkToken);
      if (!session.finished) return refused('provider_refused', 'the bank was not linked at the aggregator (the hosted link was not finished); start the sign-in again');
      let credentials: LinkItemCredentials;
      if (data.signInId) {
        // Update mode: the item keeps its access token; the login is repaired when the item reports no error.
        const stored = await itemCredentials(provider, data.signInId);
        if (!stored) return refused('provider_refused', `there is no ${provider.displayName} sign-in to repair with that id`);
        credentials = stored;
      } else {
        const publicToken = session.publicTokens[0];
        if (!publicToken) return refused('provider_refused', 'the hosted link finished without linking a bank; start the sign-in again');
        const exchanged = await api.exchange(publicToken);
        credentials = { accessToken: exchanged.access_token, itemId: exchanged.item_id };
      }
      const item = await api.item(credentials.accessToken);
      if (item.error) return refused('provider_refused', `the bank still reports ${item.error.error_code}; open the sign-in again and finish the bank's login`);
      const institution = item.institution_name ?? 'a bank';
      const outcome = await applyGrant(deps.db, {
        provider: { ...provider, displayName: `${institution} (${provider.displayName})` },
        signInId: data.signInId,
        accountId: item.item_id,
        grantedScopes: item.products,
        sectors: [...provider.sectors],
        ...(data.demoEndpoints ? { demoEndpoints: data.demoEndpoints } : {}),
        seal: (signInId) => sealCredentials(deps.credentialsKey, credentials, signInId),
      });
      if (outcome.outcome === 'refused') return refused(outcome.message === OTHER_ACCOUNT || outcome.message === DEMO_MARK_FIXED ? 'other_account' : 'provider_refused', outcome.message);
      for (const connection of outcome.active) {
        await deps.sync
          .schedule(connection.id, connection.sync_interval_minutes ?? provider.defaultSyncIntervalMinutes ?? 240)
          .catch((error: unknown) => log.warn({ err: error, connectionId: connection.id }, 'could not schedule the connection; the reconciler will'));
      }
      log.info({ signInId: outcome.signInId, renewed: outcome.renewed }, data.signInId ? 'bank login repaired' : 'bank linked');
      return {
        status: 'signed_in',
        signInId: outcome.signInId,
        renewed: outcome.renewed,
        connectionIds: outcome.active.map((connection) => connection.id),
        grantedSectors: [...provider.sectors],
        waiting: outcome.waiting,
      };
    } catch (error) {
      return refusalOf(error, 'finish the link');
    }
  }

  return { link_start: linkStart, link_exchange: linkExchange };
}
