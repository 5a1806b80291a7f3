import { z } from 'zod';
import type { Sector } from '../sectors/index.ts';

/**
 * How a connection of a provider gets its data:
 * - `token`: the operator pastes a credential (a hub's long-lived token); the sync-worker pulls on a schedule.
 * - `push`: the device pushes to `POST /api/ingest/:connectionId` with a per-connection secret; nothing is pulled.
 * - `oauth`: the operator signs in at the provider (authorization code, PKCE where supported); the granted
 *   scopes decide the connections (spec 2.5); the sync-worker pulls on a schedule.
 */
export type SignInKind = 'token' | 'push' | 'oauth';

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
  /** The sectors a granted scope list covers (spec 2.5); an empty list means no connection. */
  sectorsOf(grantedScopes: readonly string[]): Sector[];
  /**
   * Where the provider names the signed-in account: a GET with the new access token, and the JSON field
   * holding its id. A re-sign-in must report the same id.
   */
  account: { url: string; field: string };
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
  signIn: SignInKind;
  /** Default sync interval of a new connection; null for push providers (never scheduled). */
  defaultSyncIntervalMinutes: number | null;
  /** Validates the credentials the operator supplies for a `token` provider; sealed before storage. */
  credentialsSchema?: z.ZodType;
  /** For `oauth` providers. */
  oauth?: OAuthSpec;
};

const httpOrigin = z
  .url({ protocol: /^https?$/, error: 'must be an http:// or https:// address' })
  .refine((value) => {
    const url = new URL(value);
    return !url.username && !url.password && !url.search && !url.hash;
  }, { error: 'must carry no user name, password, query or fragment' })
  .transform((value) => value.replace(/\/+$/, ''));

/** A Home Assistant hub: its base address (e.g. http://homeassistant.local:8123) and a long-lived access token. */
export const HomeAssistantCredentialsSchema = z.object({
  baseUrl: httpOrigin,
  token: z.string().trim().min(1).max(4096),
});
export type HomeAssistantCredentials = z.output<typeof HomeAssistantCredentialsSchema>;

export const HOME_ASSISTANT: ProviderDescriptor = {
  kind: 'home-assistant',
  displayName: 'Home Assistant',
  sectors: ['home'],
  objects: ['home.entity'],
  signIn: 'token',
  defaultSyncIntervalMinutes: 15,
  credentialsSchema: HomeAssistantCredentialsSchema,
};

/** The phone health app (Health Auto Export) pushing its REST API automation to the gateway. */
export const HEALTH_AUTO_EXPORT: ProviderDescriptor = {
  kind: 'health-auto-export',
  displayName: 'Phone health app (Health Auto Export)',
  sectors: ['health'],
  objects: ['health.sample', 'health.workout', 'health.sleep_session'],
  signIn: 'push',
  defaultSyncIntervalMinutes: null,
};

export const PROVIDERS: readonly ProviderDescriptor[] = [HOME_ASSISTANT, HEALTH_AUTO_EXPORT];

const byKind = new Map(PROVIDERS.map((provider) => [provider.kind, provider]));

export function findProvider(kind: string): ProviderDescriptor | undefined {
  return byKind.get(kind);
}

/** Every provider kind this process knows: the catalogue and any a test added. */
export function listProviders(): readonly ProviderDescriptor[] {
  return [...byKind.values()];
}

/**
 * Adds a provider kind to this process's catalogue. For tests only: a test provider (an OAuth double)
 * is known to the Console and the sync-worker it starts, and never ships in `PROVIDERS`.
 */
export function registerExtraProvider(provider: ProviderDescriptor): void {
  if (byKind.has(provider.kind)) throw new Error(`provider '${provider.kind}' is already known`);
  byKind.set(provider.kind, provider);
}
