import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { DEFAULT_CALENDAR_WINDOW, type CalendarWindow } from '../kit/calendar-window.ts';
import { eventRecords, syncWindow } from './calendar-mapping.ts';
import { DavCursorSchema, sourceIdOf, syncDavCollections, type DavFlavour } from './dav-sync.ts';
import { list, record, type WebDav } from './webdav-client.ts';

export const CALENDAR_OBJECT = 'calendar.event';

/** Reminders live in VTODO-only collections on iCloud; only calendars that hold events are read. */
function holdsEvents(props: Record<string, unknown>): boolean {
  const components = list(record(props['supported-calendar-component-set']).comp).map((comp) => String(record(comp)['@_name'] ?? '').toUpperCase());
  return components.length === 0 || components.includes('VEVENT');
}

const CALDAV: DavFlavour = {
  namespace: 'urn:ietf:params:xml:ns:caldav',
  homeSet: 'calendar-home-set',
  collectionType: 'calendar',
  dataProp: 'calendar-data',
  multiget: 'calendar-multiget',
  wanted: holdsEvents,
};

/** Rows of one resource share the prefix `<path>#`, one row per occurrence after it. */
const rowsOf = (resource: string) => (sourceId: string) => sourceId.startsWith(`${resource}#`);

/**
 * Calendars over CalDAV: the resources that changed since each calendar's sync token are read whole and
 * expanded into occurrences over the sync window; a changed resource's occurrences that are no longer
 * there (a new EXDATE, a shortened rule) are removed with it, and a removed resource takes all of its rows.
 */
export async function syncCalendar(context: ConnectorContext, dav: WebDav, base: URL, settings: CalendarWindow = DEFAULT_CALENDAR_WINDOW): Promise<SyncOutcome> {
  const parsed = DavCursorSchema.safeParse(context.cursor);
  const cursor = parsed.success ? parsed.data : null;
  const window = syncWindow(Date.now(), settings);
  const cached = await context.cache.sourceIds(CALENDAR_OBJECT);
  const seen = new Set<string>();
  const result = await syncDavCollections(dav, base, CALDAV, cursor, async (changes) => {
    const records: Array<Record<string, unknown>> = [];
    const stale: string[] = [];
    for (const item of changes.changed) {
      const resource = sourceIdOf(item.path);
      let rows: Array<Record<string, unknown>>;
      try {
        rows = eventRecords(resource, changes.name, item.data, window);
      } catch {
        context.log.warn({ path: item.path }, 'skipped a calendar resource that could not be read');
        continue;
      }
      const ids = new Set(rows.map((row) => String(row.source_id)));
      for (const id of ids) seen.add(id);
      records.push(...rows);
      stale.push(...cached.filter((id) => rowsOf(resource)(id) && !ids.has(id)));
    }
    for (const removed of changes.removed.map(sourceIdOf)) stale.push(...cached.filter(rowsOf(removed)));
    await context.cache.upsert(CALENDAR_OBJECT, records);
    if (stale.length > 0) await context.cache.remove(CALENDAR_OBJECT, stale);
  });
  const gone = result.goneCollections.map(sourceIdOf);
  const stale = cursor === null ? cached.filter((id) => !seen.has(id)) : cached.filter((id) => gone.some((collection) => id.startsWith(collection)));
  if (stale.length > 0) await context.cache.remove(CALENDAR_OBJECT, stale);
  return { mode: cursor === null ? 'full' : 'incremental', cursor: result.cursor };
}
