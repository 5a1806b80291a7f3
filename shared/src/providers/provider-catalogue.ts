import { GMAIL } from './gmail.ts';
import { GOOGLE } from './google.ts';
import { HEALTH_AUTO_EXPORT } from './health-auto-export.ts';
import { HOME_ASSISTANT } from './home-assistant.ts';
import { MICROSOFT } from './microsoft.ts';
import { ICLOUD } from './icloud.ts';
import type { ProviderDescriptor } from './provider-types.ts';
import { PLAID } from './plaid.ts';
import { SIMPLEFIN } from './simplefin.ts';
import { WHOOP } from './whoop.ts';

export * from './provider-types.ts';
export * from './home-assistant.ts';
export * from './health-auto-export.ts';
export * from './microsoft.ts';
export * from './simplefin.ts';
export * from './plaid.ts';
export * from './provider-origins.ts';
export * from './demo-endpoints.ts';
export * from './whoop.ts';
export * from './google.ts';
export * from './gmail.ts';
export * from './icloud.ts';

/** Every provider kind, each declared in its own file (descriptor, credentials schema, scope → sector rule). */
export const PROVIDERS: readonly ProviderDescriptor[] = [HOME_ASSISTANT, HEALTH_AUTO_EXPORT, MICROSOFT, SIMPLEFIN, PLAID, WHOOP, GOOGLE, GMAIL, ICLOUD];

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
