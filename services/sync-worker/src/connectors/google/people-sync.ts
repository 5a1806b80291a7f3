import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { googleReader, parseEach } from './google-api.ts';
import { contactRecord, GooglePersonSchema } from './people-mapping.ts';

const OBJECT = 'contacts.contact';
/** Every call of one sync chain must ask the same fields: a token is bound to them. */
export const PERSON_FIELDS = 'names,emailAddresses,phoneNumbers,organizations,birthdays,metadata';

const PageSchema = z.object({ connections: z.array(z.unknown()).default([]), nextPageToken: z.string().nullish(), nextSyncToken: z.string().nullish() });
const CursorSchema = z.object({ syncToken: z.string() });

/**
 * People `connections.list` (reference §7.2): a full listing asks for a sync token, later ones pass it
 * and get only the changed people, the deleted ones marked `metadata.deleted`. An expired token
 * (`EXPIRED_SYNC_TOKEN`) is an expired cursor: the runner lists once in full.
 */
export async function syncContacts(context: ConnectorContext, apiBase: string): Promise<SyncOutcome> {
  const previous = CursorSchema.safeParse(context.cursor);
  const syncToken = previous.success ? previous.data.syncToken : undefined;
  const pages = googleReader(context, 'Google Contacts', 'People API');
  const query = { personFields: PERSON_FIELDS, pageSize: '1000', requestSyncToken: 'true', ...(syncToken ? { syncToken } : {}) };
  const listed = new Set<string>();
  const deleted: string[] = [];
  let nextSyncToken: string | undefined;
  for await (const page of pages(`${apiBase}/people/me/connections`, query, PageSchema)) {
    const people = parseEach(context, 'Google contact', GooglePersonSchema, page.connections);
    const live = people.filter((person) => person.metadata?.deleted !== true);
    deleted.push(...people.filter((person) => person.metadata?.deleted === true).map((person) => person.resourceName));
    if (live.length > 0) await context.cache.upsert(OBJECT, live.map(contactRecord));
    for (const person of live) listed.add(person.resourceName);
    if (page.nextSyncToken) nextSyncToken = page.nextSyncToken;
  }
  const known = await context.cache.sourceIds(OBJECT);
  const gone = syncToken ? deleted.filter((id) => known.includes(id)) : known.filter((id) => !listed.has(id));
  if (gone.length > 0) await context.cache.remove(OBJECT, gone);
  return { mode: syncToken ? 'incremental' : 'full', cursor: nextSyncToken ? { syncToken: nextSyncToken } : null };
}
