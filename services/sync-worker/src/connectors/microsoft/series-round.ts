import type { ConnectorContext } from '../connector-types.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import { splitRemoved, type GraphClient } from './graph-client.ts';
import { eventRecord, isSeriesMaster, seriesOf, type Series } from './graph-mapping.ts';

type EventRecord = ReturnType<typeof eventRecord>;
const OBJECT = 'calendar.event';
const BATCH = 500;

/**
 * The calendar events of one sync, written as rows with their series' fields. Occurrences may come
 * stripped and their master on any page of the round (or, in a later round, alone when only the series
 * changed), so a round's items are gathered before they are written; `series` (kept in the cursor)
 * remembers each master's shared fields between syncs. Masters are never written as events.
 */
export function seriesWriter(context: Pick<ConnectorContext, 'cache'>, graph: GraphClient, prefer: readonly string[], series: Record<string, Series>) {
  const written = new Set<string>();
  const removed = new Set<string>();

  /** The master's fields, read once with GET /me/events/{id} when no round brought it (reference §6.2, event resource). */
  async function seriesFor(masterId: string): Promise<Series | undefined> {
    if (series[masterId]) return series[masterId];
    try {
      series[masterId] = seriesOf(await graph.get(`/me/events/${encodeURIComponent(masterId)}`, prefer));
    } catch (error) {
      // The master is gone (deleted since the round); its occurrences are listed as removed next round.
      if (!(error instanceof SourceRejectedError)) throw error;
    }
    return series[masterId];
  }

  async function write(items: ReadonlyArray<Record<string, unknown>>, calendar: string | null): Promise<Array<{ id: string; start: number }>> {
    const records: EventRecord[] = [];
    for (const item of items) {
      if (isSeriesMaster(item)) continue;
      const masterId = typeof item.seriesMasterId === 'string' ? item.seriesMasterId : undefined;
      records.push(eventRecord(item, { calendar, series: masterId ? await seriesFor(masterId) : undefined }));
    }
    for (let from = 0; from < records.length; from += BATCH) await context.cache.upsert(OBJECT, records.slice(from, from + BATCH));
    for (const record of records) written.add(record.source_id);
    return records.map((record) => ({ id: record.source_id, start: Date.parse(String(record.start_at ?? `${String(record.start_date)}T00:00:00Z`)) }));
  }

  return {
    /**
     * One delta round from `first`: masters update `series`; when `window` is given (an incremental
     * round), a master that changed without any of its occurrences in the round has them read again
     * through `/me/events/{id}/instances` (reference §6.2 [MG-INST]), since the round need not list them.
     */
    async round(first: string, calendar: string | null, window?: { start: string; end: string }): Promise<string> {
      const items: Array<Record<string, unknown>> = [];
      const deltaLink = await graph.deltaRound(first, prefer, async (page) => {
        const { present, removed: gone } = splitRemoved(page);
        items.push(...present);
        for (const id of gone) removed.add(id);
      });
      const changed = items.filter(isSeriesMaster).map((master) => {
        const id = String(master.id);
        series[id] = seriesOf(master);
        return id;
      });
      for (const id of removed) delete series[id];
      await write(items, calendar);
      if (window) {
        const query = new URLSearchParams({ startDateTime: window.start, endDateTime: window.end });
        const listed = new Set(items.map((item) => item.seriesMasterId));
        for (const id of changed.filter((master) => !listed.has(master))) await write(await graph.list(`/me/events/${encodeURIComponent(id)}/instances?${query.toString()}`, prefer), calendar);
      }
      return deltaLink;
    },
    /** A plain list of a calendar's events (no delta): written; returns each row's id and start (ms). */
    write,
    /** Ids gone from the source (and not written by any round of this sync) leave the cache. */
    remove(ids: Iterable<string>): void {
      for (const id of ids) removed.add(id);
    },
    async finish(): Promise<void> {
      const ids = [...removed].filter((id) => !written.has(id));
      if (ids.length > 0) await context.cache.remove(OBJECT, ids);
    },
  };
}
