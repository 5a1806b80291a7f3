import { describe, expect, it } from 'vitest';
import { PROVIDERS } from '@pcg/shared/providers';
import { CONNECTORS } from '../../services/sync-worker/src/connectors/registry.ts';

/**
 * Issue 34: what get_schema's notes promise about fetch_live is read from the provider descriptors'
 * liveObjects; the sync-worker's connectors are what answer. The two must say the same, or a note would
 * promise a live read that every connection answers with "cannot be read live".
 */
describe('live reads: the descriptors and the connectors agree', () => {
  it.each(PROVIDERS.map((provider) => [provider.kind, provider] as const))('%s reads live exactly what its descriptor says', (kind, provider) => {
    const connector = CONNECTORS.find((candidate) => candidate.provider.kind === kind);
    expect(connector, `a connector for ${kind}`).toBeDefined();
    expect(connector?.fetchLive !== undefined, `${kind} has fetchLive`).toBe((provider.liveObjects ?? []).length > 0);
    for (const object of provider.liveObjects ?? []) expect(provider.objects, `${kind} fills ${object}`).toContain(object);
  });
});
