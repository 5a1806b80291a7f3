import type { ConnectorContext } from '../connector-types.ts';
import { splitRemoved } from './graph-client.ts';

type ToRecord = (item: Record<string, unknown>) => Record<string, unknown> & { source_id: string };

/**
 * Applies the pages of one sync's delta rounds to the cache: items are upserted as they come (idempotent
 * on the source id), `@removed` ids are gathered and removed at the end, except the ones some round of the
 * same sync listed as present. A message moved between folders is removed from one folder's round and
 * listed by another's, in either order; it must survive.
 */
export function deltaApplier(context: Pick<ConnectorContext, 'cache'>, object: string) {
  const written = new Set<string>();
  const removed = new Set<string>();
  return {
    /** The page handler of one round, whose items `toRecord` maps (a folder's name differs per round). */
    pages(toRecord: ToRecord) {
      return async (items: ReadonlyArray<Record<string, unknown>>): Promise<void> => {
        const { present, removed: gone } = splitRemoved(items);
        const records = present.map(toRecord);
        if (records.length > 0) await context.cache.upsert(object, records);
        for (const record of records) written.add(record.source_id);
        for (const id of gone) removed.add(id);
      };
    },
    async finish(): Promise<void> {
      const ids = [...removed].filter((id) => !written.has(id));
      if (ids.length > 0) await context.cache.remove(object, ids);
    },
  };
}
