import { listProviders } from '../providers/index.ts';
import type { ObjectDef } from '../sectors/index.ts';

/** Where an agent goes when a live read is not to be had: the cache, and how old it is. */
export const QUERY_THE_CACHE = "query the cache instead; describe_context gives each connection's data age (data_age_seconds)";

const names = (kinds: ReadonlyArray<{ displayName: string }>) => kinds.map((provider) => provider.displayName).join(', ');

/** The providers whose connector reads the object from the source itself (their descriptors say so). */
export function liveProvidersOf(object: string) {
  return listProviders().filter((provider) => provider.liveObjects?.includes(object) ?? false);
}

/**
 * The note get_schema adds to each object about fetch_live, drawn from what the providers can do and
 * which connections are active: it promises a live read only where a connected provider offers one,
 * names those providers, and otherwise sends the agent to the cache.
 */
export function liveNote(object: ObjectDef, active: ReadonlyArray<{ provider: string; display_name: string }>): string {
  const live = liveProvidersOf(object.name);
  const others = listProviders().filter((provider) => provider.objects.includes(object.name) && !live.includes(provider));
  if (live.length === 0) return `fetch_live cannot read ${object.name}: none of its providers (${names(others)}) is read live by this gateway; ${QUERY_THE_CACHE}.`;
  const connected = active.filter((connection) => live.some((provider) => provider.kind === connection.provider));
  const cacheOnly = others.length > 0 ? `; ${names(others)} connections are read from the cache only` : '';
  if (connected.length === 0) return `fetch_live reads ${object.name} from the source only for ${names(live)} connections, and none is connected; ${QUERY_THE_CACHE}.`;
  return `fetch_live reads ${object.name} from the source for ${names(live)} connections (connected: ${connected.map((connection) => connection.display_name).join(', ')})${cacheOnly}.`;
}
