import { z } from 'zod';
import type { ProviderDescriptor } from './provider-types.ts';

/** What the aggregator's sign-in keeps, sealed on the sign-in: the item's access token (it does not expire) and its id. */
export const PlaidItemCredentialsSchema = z.object({
  accessToken: z.string().min(1).max(512),
  itemId: z.string().min(1).max(256),
});
export type PlaidItemCredentials = z.output<typeof PlaidItemCredentialsSchema>;

export const PLAID_SANDBOX_API = 'https://sandbox.plaid.com';
export const PLAID_PRODUCTION_API = 'https://production.plaid.com';

/**
 * The bank aggregator (Plaid, reference/providers.md §1). One link is one item: one bank, one finance
 * connection. The application's client id, secret and environment are saved in the Console like an
 * OAuth provider's; the item's access token is sealed on the sign-in.
 */
export const PLAID: ProviderDescriptor = {
  kind: 'plaid',
  displayName: 'Bank aggregator (Plaid)',
  sectors: ['finance'],
  objects: ['finance.account', 'finance.transaction', 'finance.holding'],
  signIn: 'link',
  // Per item, /accounts/get and /item/get allow 15 calls a minute in production (reference §1.7); a sync makes a handful.
  defaultSyncIntervalMinutes: 240,
  link: {
    aggregator: 'plaid',
    itemCredentials: PlaidItemCredentialsSchema,
    apiBaseUrls: { sandbox: PLAID_SANDBOX_API, production: PLAID_PRODUCTION_API },
    products: ['transactions'],
    optionalProducts: ['investments'],
    clientName: 'Personal Context Gateway',
    countryCodes: ['US'],
  },
};
