import { z } from 'zod';
import { SourceUnavailableError } from '../kit/source-errors.ts';
import { hrefOf, text, xmlText, type DavResponse, type WebDav } from './webdav-client.ts';

/** What differs between CalDAV (RFC 4791) and CardDAV (RFC 6352) for discovery and reading. */
export type DavFlavour = {
  namespace: string;
  homeSet: 'calendar-home-set' | 'addressbook-home-set';
  collectionType: 'calendar' | 'addressbook';
  dataProp: 'calendar-data' | 'address-data';
  multiget: 'calendar-multiget' | 'addressbook-multiget';
  /** Whether a collection holds what this connector reads (VEVENT calendars, not Reminders). */
  wanted?: (props: Record<string, unknown>) => boolean;
};

const CollectionStateSchema = z.object({
  /** RFC 6578 sync token; null when the server offers none (then `etags` is compared). */
  token: z.string().nullable(),
  etags: z.record(z.string(), z.string()).optional(),
});
type CollectionState = z.infer<typeof CollectionStateSchema>;
export const DavCursorSchema = z.object({ collections: z.record(z.string(), CollectionStateSchema) });
export type DavCursor = z.infer<typeof DavCursorSchema>;

export type DavItem = { path: string; etag: string | undefined; data: string };
/** One collection's changes: items changed or added (with their data) and paths removed. */
export type CollectionChanges = { path: string; name: string; changed: DavItem[]; removed: string[] };

const MULTIGET_BATCH = 100;
const MAX_TRUNCATED_ROUNDS = 100;

const pathOf = (href: string, base: URL) => new URL(href, base).pathname;
const etagOf = (props: Record<string, unknown>) => text(props.getetag);

async function discoverHome(dav: WebDav, base: URL, flavour: DavFlavour): Promise<URL> {
  const root = await dav.propfind(base, '0', '<d:current-user-principal/>');
  const principalHref = root.responses.map((response) => hrefOf(response.props['current-user-principal'])).find((href) => href !== undefined);
  if (principalHref === undefined) throw new SourceUnavailableError('iCloud named no principal for the account');
  const principal = new URL(principalHref, base);
  const found = await dav.propfind(principal, '0', `<c:${flavour.homeSet}/>`, ` xmlns:c="${flavour.namespace}"`);
  const homeHref = found.responses.map((response) => hrefOf(response.props[flavour.homeSet])).find((href) => href !== undefined);
  if (homeHref === undefined) throw new SourceUnavailableError(`iCloud named no ${flavour.homeSet} for the account`);
  // An absolute href on a partition host (reference §8.3): the guard checks it like any address.
  return new URL(homeHref, principal);
}

type Collection = { url: URL; name: string; syncToken: string | undefined };

async function listCollections(dav: WebDav, home: URL, flavour: DavFlavour): Promise<Collection[]> {
  const listing = await dav.propfind(
    home,
    '1',
    '<d:resourcetype/><d:displayname/><d:sync-token/><c:supported-calendar-component-set/>',
    ` xmlns:c="${flavour.namespace}"`,
  );
  return listing.responses
    .filter((response) => flavour.collectionType in (response.props.resourcetype !== null && typeof response.props.resourcetype === 'object' ? response.props.resourcetype : {}))
    .filter((response) => flavour.wanted?.(response.props) ?? true)
    .map((response) => {
      const url = new URL(response.href, home);
      return { url, name: text(response.props.displayname) ?? url.pathname, syncToken: text(response.props['sync-token']) };
    });
}

type Delta = { changed: Map<string, string | undefined>; removed: string[]; state: CollectionState };

/** RFC 6578 sync-collection from `token` (empty: everything), following 507 truncation until the end. */
async function syncCollection(dav: WebDav, collection: URL, token: string | null): Promise<Delta> {
  const changed = new Map<string, string | undefined>();
  const removed: string[] = [];
  let current = token;
  for (let round = 0; round < MAX_TRUNCATED_ROUNDS; round += 1) {
    const tokenElement = current === null ? '<d:sync-token/>' : `<d:sync-token>${xmlText(current)}</d:sync-token>`;
    const answer = await dav.report(collection, '0', `<d:sync-collection xmlns:d="DAV:">${tokenElement}<d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop></d:sync-collection>`);
    let truncated = false;
    for (const response of answer.responses) {
      const path = pathOf(response.href, collection);
      // iCloud lists the collection itself among the changes (reference §8.4); a 507 there means "more to come".
      if (path === collection.pathname) {
        truncated ||= response.status === 507;
        continue;
      }
      if (response.status === 404) {
        removed.push(path);
        changed.delete(path);
      } else changed.set(path, etagOf(response.props));
    }
    if (answer.syncToken === undefined) throw new SourceUnavailableError('iCloud answered a sync-collection without a sync token');
    current = answer.syncToken;
    if (!truncated) return { changed, removed, state: { token: current } };
  }
  throw new SourceUnavailableError('iCloud kept truncating a sync-collection answer');
}

/** For a server without sync-collection: list the members' ETags and compare them with the stored ones. */
async function compareEtags(dav: WebDav, collection: URL, known: Record<string, string>): Promise<Delta> {
  const listing = await dav.propfind(collection, '1', '<d:getetag/><d:resourcetype/>');
  const etags: Record<string, string> = {};
  const changed = new Map<string, string | undefined>();
  for (const response of listing.responses) {
    const path = pathOf(response.href, collection);
    const etag = etagOf(response.props);
    if (path === collection.pathname || etag === undefined) continue;
    etags[path] = etag;
    if (known[path] !== etag) changed.set(path, etag);
  }
  const removed = Object.keys(known).filter((path) => !(path in etags));
  return { changed, removed, state: { token: null, etags } };
}

async function fetchData(dav: WebDav, collection: URL, paths: readonly string[], flavour: DavFlavour): Promise<DavItem[]> {
  const items: DavItem[] = [];
  for (let start = 0; start < paths.length; start += MULTIGET_BATCH) {
    const hrefs = paths.slice(start, start + MULTIGET_BATCH).map((path) => `<d:href>${xmlText(path)}</d:href>`).join('');
    const answer = await dav.report(
      collection,
      '1',
      `<c:${flavour.multiget} xmlns:d="DAV:" xmlns:c="${flavour.namespace}"><d:prop><d:getetag/><c:${flavour.dataProp}/></d:prop>${hrefs}</c:${flavour.multiget}>`,
    );
    for (const response of answer.responses as DavResponse[]) {
      const data = text(response.props[flavour.dataProp]);
      // Gone between the sync report and this read: the next sync lists it as removed.
      if (data !== undefined) items.push({ path: pathOf(response.href, collection), etag: etagOf(response.props), data });
    }
  }
  return items;
}

/**
 * Reads every collection of one flavour: from the stored sync token of each (RFC 6578) or, without one,
 * by ETag comparison; with no cursor, everything. `visit` receives each collection's changes before the
 * next is read. Collections gone since the cursor are returned so their rows can be removed.
 */
export async function syncDavCollections(
  dav: WebDav,
  base: URL,
  flavour: DavFlavour,
  cursor: DavCursor | null,
  visit: (changes: CollectionChanges) => Promise<void>,
): Promise<{ cursor: DavCursor; goneCollections: string[] }> {
  const home = await discoverHome(dav, base, flavour);
  const collections = await listCollections(dav, home, flavour);
  const next: DavCursor = { collections: {} };
  for (const collection of collections) {
    const path = collection.url.pathname;
    const stored = cursor?.collections[path];
    const delta =
      collection.syncToken === undefined
        ? await compareEtags(dav, collection.url, stored?.etags ?? {})
        : await syncCollection(dav, collection.url, stored?.token ?? null);
    const changed = await fetchData(dav, collection.url, [...delta.changed.keys()], flavour);
    await visit({ path, name: collection.name, changed, removed: delta.removed });
    next.collections[path] = delta.state;
  }
  const goneCollections = Object.keys(cursor?.collections ?? {}).filter((path) => !(path in next.collections));
  return { cursor: next, goneCollections };
}


/** A member's source id: its path as the person would read it (`/person@icloud.com/…`, not `%40`). */
export function sourceIdOf(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
