import type { CommonQueryMethods } from 'slonik';
import type { LinkAggregator, LinkProvider, RebaseUrl } from '@pcg/shared/providers';
import { createPlaidApi, type PlaidApi, type PlaidApp } from '../connectors/plaid/plaid-api.ts';
import { loadProviderApp } from './oauth-client.ts';

/** The operator's application at a link provider's aggregator: client id, secret and environment. */
export type LinkApp = PlaidApp;

/** What a `link` sign-in and an item's removal ask of the aggregator. */
export type LinkApi = Pick<PlaidApi, 'createLinkToken' | 'linkResults' | 'exchange' | 'item' | 'removeItem'>;

export type LinkApiOptions = { app: LinkApp; rebaseUrl: RebaseUrl; timeoutMs: number };

/** The client of each aggregator a `link` descriptor may name (`LinkSpec.aggregator`). */
const LINK_APIS: Record<LinkAggregator, (options: LinkApiOptions) => LinkApi> = { plaid: createPlaidApi };

/** The client of the aggregator the provider's descriptor links through. */
export function linkApiOf(provider: LinkProvider, options: LinkApiOptions): LinkApi {
  return LINK_APIS[provider.link.aggregator](options);
}

/**
 * Reads the application the operator saved in the Console for a provider kind (sealed in `provider_apps`);
 * null until it is saved with its environment.
 */
export function linkAppLoader(db: CommonQueryMethods, credentialsKey: Buffer): (kind: string) => Promise<LinkApp | null> {
  return async (kind) => {
    const app = await loadProviderApp(db, credentialsKey, kind);
    return app?.environment ? { clientId: app.clientId, clientSecret: app.clientSecret, environment: app.environment } : null;
  };
}
