import type { CommonQueryMethods } from 'slonik';
import { PLAID } from '@pcg/shared/providers';
import { loadProviderApp } from '../../sign-ins/oauth-client.ts';
import type { PlaidApp } from './plaid-api.ts';

/** Reads the aggregator application the operator saved in the Console; null until it is saved with its environment. */
export function plaidAppLoader(db: CommonQueryMethods, credentialsKey: Buffer): () => Promise<PlaidApp | null> {
  return async () => {
    const app = await loadProviderApp(db, credentialsKey, PLAID.kind);
    return app?.environment ? { clientId: app.clientId, clientSecret: app.clientSecret, environment: app.environment } : null;
  };
}
