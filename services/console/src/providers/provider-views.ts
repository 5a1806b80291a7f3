import type { DatabasePool } from '@pcg/shared/db';
import { listProviders, type ProviderDescriptor } from '@pcg/shared/providers';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { z } from 'zod';

/** Where a provider sends the operator's browser back; the Console's own origin goes in front of it. */
export const callbackPathOf = (kind: string) => `/api/connect/${kind}/callback`;

/** One provider kind as data: enough to render its connect form, with no per-provider page code. */
export const ProviderViewSchema = z.object({
  kind: z.string(),
  displayName: z.string(),
  signIn: z.enum(['token', 'push', 'oauth', 'link']),
  sectors: z.array(z.string()),
  objects: z.array(z.string()),
  defaultSyncIntervalMinutes: z.number().nullable(),
  /** `token`: the JSON Schema of what the operator types to connect (its input side); null when nothing is typed. */
  credentials: z.record(z.string(), z.unknown()).nullable(),
  /**
   * `oauth`: the scopes the sign-in asks for, whether the provider's application credentials are saved
   * (never what they are), and the callback path to register with the provider; null for other kinds.
   */
  oauth: z.object({ scopes: z.array(z.string()), appSaved: z.boolean(), callbackPath: z.string() }).nullable(),
  /**
   * `link`: whether the aggregator application (client id, secret, environment) is saved, the
   * environments it may name, and where the hosted link sends the browser back; null for other kinds.
   */
  link: z.object({ appSaved: z.boolean(), environments: z.array(z.string()), callbackPath: z.string() }).nullable(),
  /** `token`: the operator pastes a setup token the gateway claims once (`POST /api/connect/<kind>/claim`), not credentials to store. */
  claim: z.boolean(),
});
export type ProviderView = z.infer<typeof ProviderViewSchema>;

function providerView(provider: ProviderDescriptor, savedApps: ReadonlySet<string>): ProviderView {
  return {
    kind: provider.kind,
    displayName: provider.displayName,
    signIn: provider.signIn,
    sectors: [...provider.sectors],
    objects: [...provider.objects],
    defaultSyncIntervalMinutes: provider.defaultSyncIntervalMinutes,
    credentials: provider.credentialsSchema ? (z.toJSONSchema(provider.credentialsSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>) : null,
    oauth: provider.oauth ? { scopes: [...provider.oauth.scopes], appSaved: savedApps.has(provider.kind), callbackPath: callbackPathOf(provider.kind) } : null,
    link: provider.link ? { appSaved: savedApps.has(provider.kind), environments: Object.keys(provider.link.apiBaseUrls), callbackPath: callbackPathOf(provider.kind) } : null,
    claim: provider.claim !== undefined,
  };
}

/** Every provider kind this process knows (design 7.1), with each OAuth provider's application state. */
export async function listProviderViews(db: DatabasePool): Promise<ProviderView[]> {
  const saved = new Set(await createSignInQueries(db).savedAppProviders());
  return listProviders().map((provider) => providerView(provider, saved));
}
