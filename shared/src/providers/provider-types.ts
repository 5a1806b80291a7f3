import type { z } from 'zod';
import type { Sector } from '../sectors/index.ts';

/**
 * How a connection of a provider gets its data:
 * - `token`: the operator pastes a credential (a hub's long-lived token); the sync-worker pulls on a schedule.
 * - `push`: the device pushes to `POST /api/ingest/:connectionId` with a per-connection secret; nothing is pulled.
 * - `oauth`: the operator signs in at the provider (authorization code, PKCE where supported); the granted
 *   scopes decide the connections (spec 2.5); the sync-worker pulls on a schedule.
 * - `link`: the operator links a bank at the aggregator's hosted page (a bank aggregator's link flow);
 *   the aggregator sends the browser back to the Console, the sync-worker trades the session's public
 *   token for the item's access token and seals it; a link in update mode repairs a login.
 */
export type SignInKind = 'token' | 'push' | 'oauth' | 'link';

/** The environments of an aggregator application; each has its own API address and its own items. */
export const LINK_ENVIRONMENTS = ['sandbox', 'production'] as const;
export type LinkEnvironment = (typeof LINK_ENVIRONMENTS)[number];

/** The aggregators whose hosted link, items and item removal the sync-worker speaks; each has its own client there. */
export const LINK_AGGREGATORS = ['plaid'] as const;
export type LinkAggregator = (typeof LINK_AGGREGATORS)[number];

/** What a finished link keeps, sealed on the sign-in: the item's access token and the item's id. */
export type LinkItemCredentials = { accessToken: string; itemId: string };

/**
 * What a `link` provider's sign-in needs: the aggregator it links through, what its items' sealed
 * credentials hold, its API address per environment and the products a link asks for. The application
 * (client id, secret, environment) is the one the operator saved in the Console for the provider's kind.
 */
export type LinkSpec = {
  aggregator: LinkAggregator;
  itemCredentials: z.ZodType<LinkItemCredentials>;
  apiBaseUrls: Readonly<Record<LinkEnvironment, string>>;
  /** Products every link asks for (the item must support them). */
  products: readonly string[];
  /** Products a link asks for when the bank offers them (investments at a bank with a brokerage account). */
  optionalProducts: readonly string[];
  /** Shown to the person at the aggregator's hosted page (at most 30 characters). */
  clientName: string;
  countryCodes: readonly string[];
};

/** What an `oauth` provider's sign-in needs: where to send the operator, what to ask for, how to read the answer. */
export type OAuthSpec = {
  authorizeUrl: string;
  tokenUrl: string;
  /** Exactly the scopes the spec names for the provider, requested as one space-separated list. */
  scopes: readonly string[];
  /** Whether the provider takes PKCE (S256). */
  pkce: boolean;
  /** Extra authorize parameters the provider needs for a refresh token (e.g. `access_type=offline`). */
  authorizeParams?: Readonly<Record<string, string>>;
  /** Send the requested scopes again with a refresh (the Microsoft identity platform asks for them). */
  scopeOnRefresh?: boolean;
  /** Extra form fields of a refresh request (WHOOP wants `scope=offline` to hand out the next refresh token). */
  refreshParams?: Readonly<Record<string, string>>;
  /** The sectors a granted scope list covers (spec 2.5); an empty list means no connection. */
  sectorsOf(grantedScopes: readonly string[]): Sector[];
  /**
   * Where the provider names the signed-in account: a GET with the new access token and the JSON field
   * holding its id, or claims of the ID token the token endpoint returned (its id, and a name to show).
   * A re-sign-in must report the same id.
   */
  account: { url: string; field: string } | { idToken: { id: string; name?: string } };
};

/**
 * What every process may know about a provider kind: its sectors, objects and how it signs in. The
 * behaviour (sync, live reads, actions) lives in the sync-worker's connector for the same `kind`.
 */
export type ProviderDescriptor = {
  kind: string;
  displayName: string;
  /** Sectors one sign-in creates connections for (spec 2.5). */
  sectors: readonly Sector[];
  /** Catalogue objects its connections fill. */
  objects: readonly string[];
  /**
   * Catalogue objects its connector reads from the source itself (fetch_live); absent: none. The notes
   * agents read promise a live read only for these, and the sync-worker's connector must serve them.
   */
  liveObjects?: readonly string[];
  signIn: SignInKind;
  /** Default sync interval of a new connection; null for push providers (never scheduled). */
  defaultSyncIntervalMinutes: number | null;
  /** Validates the credentials the operator supplies for a `token` provider; sealed before storage. */
  credentialsSchema?: z.ZodType;
  /** Credential fields that hold an address the operator gives (a hub's): the outbound policy checks them at save (issue 32). */
  addressFields?: readonly string[];
  /** For `oauth` providers. */
  oauth?: OAuthSpec;
  /** For `link` providers. */
  link?: LinkSpec;
  /**
   * For a `token` provider whose pasted token is a one-time setup token (the bank-link bridge): the
   * sync-worker claims it once at the address it decodes to, and seals what the claim returns; the
   * Console never seals the pasted token itself.
   */
  claim?: { decode(token: string): URL | undefined };
};

/** A provider that signs in with a hosted link, and so declares its link. */
export type LinkProvider = ProviderDescriptor & { signIn: 'link'; link: LinkSpec };

export function isLinkProvider(provider: ProviderDescriptor | undefined): provider is LinkProvider {
  return provider?.signIn === 'link' && provider.link !== undefined;
}
