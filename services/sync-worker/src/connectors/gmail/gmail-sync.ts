import PQueue from 'p-queue';
import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { statusMeans } from '../kit/classifiers.ts';
import { nextPageToken, walkPages } from '../kit/paging.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import { parseEach } from '../google/google-api.ts';
import { gmailClient, type GmailGet } from './gmail-client.ts';
import { GmailMessageSchema, HIDDEN_LABELS, messageRecord, METADATA_HEADERS, type LabelNames } from './gmail-mapping.ts';

const OBJECT = 'mail.message';
/**
 * `messages.get` calls in flight at once, and started per second. Gmail allows a user 15,000 quota
 * units a minute and a `messages.get` costs 5 (reference §5.5): 40 a second is 12,000 units a minute,
 * leaving a fifth of the quota to the listing, the history and any other client of the same mailbox.
 * Ten in flight reach that rate at a quarter second a call without opening more connections than
 * Google's per-user concurrency tolerates.
 */
export const GMAIL_GET_CONCURRENCY = 10;
export const GMAIL_GETS_PER_SECOND = 40;
/** Records written per upsert while a full sync walks a large mailbox. */
const BATCH = 200;

const ProfileSchema = z.looseObject({ emailAddress: z.string(), historyId: z.string().regex(/^\d+$/) });
const LabelsSchema = z.looseObject({ labels: z.array(z.looseObject({ id: z.string(), name: z.string(), type: z.string().optional() })).default([]) });
const ListPageSchema = z.looseObject({ messages: z.array(z.looseObject({ id: z.string().min(1) })).default([]), nextPageToken: z.string().nullish() });
const HistoryRef = z.looseObject({ message: z.looseObject({ id: z.string().min(1) }) });
const HistoryPageSchema = z.looseObject({
  history: z
    .array(z.looseObject({ messagesAdded: z.array(HistoryRef).default([]), messagesDeleted: z.array(HistoryRef).default([]), labelsAdded: z.array(HistoryRef).default([]), labelsRemoved: z.array(HistoryRef).default([]) }))
    .default([]),
  historyId: z.string().regex(/^\d+$/),
  nextPageToken: z.string().nullish(),
});
const CursorSchema = z.object({ account: z.string(), historyId: z.string().regex(/^\d+$/) });
type Cursor = z.infer<typeof CursorSchema>;

const metadataQuery = () => new URLSearchParams([['format', 'metadata'], ...METADATA_HEADERS.map((name) => ['metadataHeaders', name] as [string, string])]);

async function labelNames(get: GmailGet): Promise<LabelNames> {
  const { labels } = await get('/labels', new URLSearchParams(), LabelsSchema);
  return new Map(labels.filter((label) => label.type !== 'system').map((label) => [label.id, label.name]));
}

/**
 * Fetches the envelopes of `ids` at the bound above and hands them on in batches; a message gone since
 * it was listed (404) is reported in `missing`. The first failure stops what has not started and is thrown.
 */
async function fetchEnvelopes(context: ConnectorContext, get: GmailGet, ids: readonly string[], onBatch: (records: unknown[]) => Promise<void>): Promise<Set<string>> {
  const queue = new PQueue({ concurrency: GMAIL_GET_CONCURRENCY, intervalCap: GMAIL_GETS_PER_SECOND, interval: 1_000 });
  const missing = new Set<string>();
  let pending: unknown[] = [];
  const flush = async () => {
    const batch = pending;
    pending = [];
    if (batch.length > 0) await onBatch(batch);
  };
  const fetchOne = async (id: string) => {
    try {
      pending.push(await get(`/messages/${encodeURIComponent(id)}`, metadataQuery(), z.unknown()));
      // The call that fills a batch writes it, so a failed write fails the sync like a failed read.
      if (pending.length >= BATCH) await flush();
    } catch (error) {
      if (error instanceof SourceRejectedError && error.status === 404) missing.add(id);
      else throw error;
    }
  };
  try {
    await Promise.all(ids.map((id) => queue.add(() => fetchOne(id), { signal: context.signal })));
  } catch (error) {
    queue.clear();
    await queue.onIdle();
    throw error;
  }
  await flush();
  return missing;
}

function writer(context: ConnectorContext, account: string, names: LabelNames, listed: Set<string>, hidden: Set<string>) {
  return async (raw: unknown[]) => {
    const messages = parseEach(context, 'Gmail message', GmailMessageSchema, raw);
    const kept = messages.filter((message) => !message.labelIds.some((label) => HIDDEN_LABELS.has(label)));
    for (const message of messages) (kept.includes(message) ? listed : hidden).add(message.id);
    if (kept.length > 0) await context.cache.upsert(OBJECT, kept.map((message) => messageRecord(message, account, names)));
  };
}

/** Every message outside SPAM and TRASH, then the history id taken before the listing as the next start. */
async function fullSync(context: ConnectorContext, get: GmailGet): Promise<SyncOutcome> {
  const profile = await get('/profile', new URLSearchParams(), ProfileSchema);
  const names = await labelNames(get);
  const ids: string[] = [];
  const fetchPage = (token: string | undefined) => get('/messages', new URLSearchParams({ maxResults: '500', ...(token ? { pageToken: token } : {}) }), ListPageSchema);
  for await (const page of walkPages(fetchPage, nextPageToken, { what: 'Gmail', maxPages: 10_000 })) ids.push(...page.messages.map((message) => message.id));
  const listed = new Set<string>();
  await fetchEnvelopes(context, get, [...new Set(ids)], writer(context, profile.emailAddress, names, listed, new Set()));
  const stale = (await context.cache.sourceIds(OBJECT)).filter((id) => !listed.has(id));
  if (stale.length > 0) await context.cache.remove(OBJECT, stale);
  return { mode: 'full', cursor: { account: profile.emailAddress, historyId: profile.historyId } satisfies Cursor };
}

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

export async function syncGmail(context: ConnectorContext, apiBase: string): Promise<SyncOutcome> {
  const get = gmailClient(context, apiBase);
  const previous = CursorSchema.safeParse(context.cursor);
  return previous.success ? incrementalSync(context, get, previous.data) : fullSync(context, get);
}
