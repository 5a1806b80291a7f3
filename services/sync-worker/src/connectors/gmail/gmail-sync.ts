import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { statusMeans } from '../kit/classifiers.ts';
import { nextPageToken, walkPages } from '../kit/paging.ts';
import { gmailClient, type GmailGet } from './gmail-client.ts';
import { fetchEnvelopes, labelNames, OBJECT, writer } from './gmail-envelopes.ts';
import { CursorSchema, fullSync, type Cursor } from './gmail-full-sync.ts';

export { GMAIL_GET_CONCURRENCY, GMAIL_GETS_PER_SECOND } from './gmail-envelopes.ts';

const HistoryRef = z.looseObject({ message: z.looseObject({ id: z.string().min(1) }) });
const HistoryPageSchema = z.looseObject({
  history: z
    .array(z.looseObject({ messagesAdded: z.array(HistoryRef).default([]), messagesDeleted: z.array(HistoryRef).default([]), labelsAdded: z.array(HistoryRef).default([]), labelsRemoved: z.array(HistoryRef).default([]) }))
    .default([]),
  historyId: z.string().regex(/^\d+$/),
  nextPageToken: z.string().nullish(),
});

/**
 * The changes since the stored history id (reference §5.4): added and relabelled messages are read
 * again (their labels carry unread, starred and folder), deleted ones removed, and those moved to SPAM
 * or TRASH removed as a full listing would leave them out. A stale start is 404: the kit's expired
 * cursor, so the runner syncs once in full.
 */
async function incrementalSync(context: ConnectorContext, get: GmailGet, cursor: Cursor): Promise<SyncOutcome> {
  const query = (token: string | undefined) =>
    new URLSearchParams([
      ['startHistoryId', cursor.historyId],
      ['maxResults', '500'],
      ...['messageAdded', 'messageDeleted', 'labelAdded', 'labelRemoved'].map((type) => ['historyTypes', type] as [string, string]),
      ...(token ? [['pageToken', token] as [string, string]] : []),
    ]);
  const staleStart = statusMeans(404, { kind: 'cursor_expired' });
  const touched = new Set<string>();
  const deleted = new Set<string>();
  let historyId = cursor.historyId;
  for await (const page of walkPages((token) => get('/history', query(token), HistoryPageSchema, staleStart), nextPageToken, { what: 'Gmail history', maxPages: 10_000 })) {
    for (const record of page.history) {
      for (const { message } of record.messagesDeleted) {
        deleted.add(message.id);
        touched.delete(message.id);
      }
      for (const { message } of [...record.messagesAdded, ...record.labelsAdded, ...record.labelsRemoved]) if (!deleted.has(message.id)) touched.add(message.id);
    }
    historyId = page.historyId;
  }
  const listed = new Set<string>();
  const hidden = new Set<string>();
  if (touched.size > 0) {
    const missing = await fetchEnvelopes(context, get, [...touched], writer(context, cursor.account, await labelNames(get), listed, hidden));
    for (const id of [...missing, ...hidden]) deleted.add(id);
  }
  const known = new Set(await context.cache.sourceIds(OBJECT));
  const gone = [...deleted].filter((id) => known.has(id));
  if (gone.length > 0) await context.cache.remove(OBJECT, gone);
  return { mode: 'incremental', cursor: { account: cursor.account, historyId } satisfies Cursor };
}

/** Incremental from a stored history id; a full sync the first time, after an expired one, or to finish one cut short. */
export async function syncGmail(context: ConnectorContext, apiBase: string): Promise<SyncOutcome> {
  const get = gmailClient(context, apiBase);
  const previous = CursorSchema.safeParse(context.cursor);
  if (!previous.success) return fullSync(context, get);
  const { full, ...cursor } = previous.data;
  return full ? fullSync(context, get, { ...cursor, full }) : incrementalSync(context, get, cursor);
}
