import type { CacheWriter, ConnectorContext, SyncOutcome } from '../connectors/connector-types.ts';
import { SourceCursorExpiredError } from '../connectors/kit/source-errors.ts';

type Sync = (context: ConnectorContext) => Promise<SyncOutcome>;

/** A cache writer that remembers every source id written per object, to find what a full resync no longer lists. */
function trackingWriter(cache: CacheWriter) {
  const seen = new Map<string, Set<string>>();
  const writer: CacheWriter = {
    async upsert(object, records) {
      const ids = seen.get(object) ?? new Set<string>();
      for (const record of records) {
        const id = (record as { source_id?: unknown } | null)?.source_id;
        if (typeof id === 'string') ids.add(id);
      }
      seen.set(object, ids);
      return cache.upsert(object, records);
    },
    sourceIds: (object, since) => cache.sourceIds(object, since),
    idsOf: (object, sourceIds) => cache.idsOf(object, sourceIds),
    remove: (object, sourceIds) => cache.remove(object, sourceIds),
  };
  return { writer, seen };
}

/**
 * Runs a connector's sync; when the source says the cursor expired, runs it once more in full (no cursor)
 * and then removes, for each object of the provider, the cached rows the full resync did not list. The
 * upserts are idempotent on (connection, source id), so nothing is duplicated; the removal runs only after
 * the full resync finished, so a resync cut short loses nothing (its next attempt starts over in full,
 * because the cursor stored on the connection is still the expired one).
 */
export async function syncWithResync(context: ConnectorContext, sync: Sync, objects: readonly string[]): Promise<SyncOutcome> {
  try {
    return await sync(context);
  } catch (error) {
    if (!(error instanceof SourceCursorExpiredError) || context.cursor === null) throw error;
    context.log.warn({ reason: error.message }, 'sync cursor expired; syncing once in full');
  }
  const { writer, seen } = trackingWriter(context.cache);
  const full: ConnectorContext = {
    ...context,
    get credentials() {
      return context.credentials;
    },
    cursor: null,
    cache: writer,
  };
  const outcome = await sync(full);
  for (const object of new Set([...objects, ...seen.keys()])) {
    const listed = seen.get(object) ?? new Set<string>();
    const absent = (await context.cache.sourceIds(object)).filter((id) => !listed.has(id));
    if (absent.length > 0) await context.cache.remove(object, absent);
  }
  return { ...outcome, mode: 'full' };
}
