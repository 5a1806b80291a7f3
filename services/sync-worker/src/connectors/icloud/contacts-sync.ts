import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { contactRecord } from './contacts-mapping.ts';
import { DavCursorSchema, sourceIdOf, syncDavCollections, type DavFlavour } from './dav-sync.ts';
import type { WebDav } from './webdav-client.ts';

export const CONTACTS_OBJECT = 'contacts.contact';

const CARDDAV: DavFlavour = {
  namespace: 'urn:ietf:params:xml:ns:carddav',
  homeSet: 'addressbook-home-set',
  collectionType: 'addressbook',
  dataProp: 'address-data',
  multiget: 'addressbook-multiget',
};

const within = (collection: string) => (sourceId: string) => sourceId.startsWith(sourceIdOf(collection));

/**
 * Contacts over CardDAV: each address book from its sync token (a full read without one); a vCard's
 * path is its source id, so a 404 in the sync report removes exactly its row. Group cards are not people
 * and are left out (and removed, should a card become one).
 */
export async function syncContacts(context: ConnectorContext, dav: WebDav, base: URL): Promise<SyncOutcome> {
  const parsed = DavCursorSchema.safeParse(context.cursor);
  const cursor = parsed.success ? parsed.data : null;
  const seen = new Set<string>();
  const result = await syncDavCollections(dav, base, CARDDAV, cursor, async (changes) => {
    const records: Array<Record<string, unknown>> = [];
    const removed = changes.removed.map(sourceIdOf);
    for (const item of changes.changed) {
      const sourceId = sourceIdOf(item.path);
      let record: Record<string, unknown> | null;
      try {
        record = contactRecord(sourceId, item.data);
      } catch {
        context.log.warn({ path: item.path }, 'skipped a vCard that could not be read');
        continue;
      }
      if (record === null) removed.push(sourceId);
      else {
        records.push(record);
        seen.add(sourceId);
      }
    }
    await context.cache.upsert(CONTACTS_OBJECT, records);
    if (removed.length > 0) await context.cache.remove(CONTACTS_OBJECT, removed);
  });
  const cached = await context.cache.sourceIds(CONTACTS_OBJECT);
  // A read from scratch lists everything there is; a book gone since the cursor takes its cards with it.
  const stale = cursor === null ? cached.filter((id) => !seen.has(id)) : cached.filter((id) => result.goneCollections.some((collection) => within(collection)(id)));
  if (stale.length > 0) await context.cache.remove(CONTACTS_OBJECT, stale);
  return { mode: cursor === null ? 'full' : 'incremental', cursor: result.cursor };
}
