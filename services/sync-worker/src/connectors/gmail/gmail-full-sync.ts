import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { nextPageToken, walkPages } from '../kit/paging.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import type { GmailGet } from './gmail-client.ts';
import { fetchEnvelopes, labelNames, OBJECT, writer } from './gmail-envelopes.ts';

const MAX_PAGES = 10_000;
const historyIdSchema = z.string().regex(/^\d+$/);
const ProfileSchema = z.looseObject({ emailAddress: z.string(), historyId: historyIdSchema });
const ListPageSchema = z.looseObject({ messages: z.array(z.looseObject({ id: z.string().min(1) })).default([]), nextPageToken: z.string().nullish() });

/**
 * Where a full sync cut short stands: the listing page it was on (null: the first) and the ids of that
 * page already written. Kept in the cursor beside the history id taken at the sync's start.
 */
const ProgressSchema = z.object({ pageToken: z.string().nullable(), done: z.array(z.string()) });
export const CursorSchema = z.object({ account: z.string(), historyId: historyIdSchema, full: ProgressSchema.optional() });
export type Cursor = z.infer<typeof CursorSchema>;
type Progress = z.infer<typeof ProgressSchema>;

const listQuery = (token: string | null) => new URLSearchParams({ maxResults: '500', ...(token ? { pageToken: token } : {}) });

/** Every id the listing names now (500 a page, 5 quota units each): what a resumed sync compares the cache with. */
async function listAll(get: GmailGet): Promise<Set<string>> {
  const ids = new Set<string>();
  const fetchPage = (token: string | undefined) => get('/messages', listQuery(token ?? null), ListPageSchema);
  for await (const page of walkPages(fetchPage, nextPageToken, { what: 'Gmail', maxPages: MAX_PAGES })) for (const message of page.messages) ids.add(message.id);
  return ids;
}

/**
 * Every message outside SPAM and TRASH, page by page (Gmail's sync guide, "Full synchronization":
 * `messages.list`, then `messages.get` of each listed id), with the history id taken from the profile
 * before the listing as the next start, so nothing that changes while the listing runs is missed
 * (reference §5.4). The sync can be cut short (a 429 among thousands of `messages.get`): what was
 * fetched is written, and the cursor stored on the connection says where it stood (that history id,
 * the page, the ids of the page done). The next attempt goes on from there with the same history id
 * and asks for no message it already wrote. Rows the listing no longer names are removed at the end;
 * when earlier pages were walked by an earlier attempt, the ids are listed once more for that.
 */
export async function fullSync(context: ConnectorContext, get: GmailGet, resume?: Cursor & { full: Progress }): Promise<SyncOutcome> {
  const start = async (): Promise<Cursor> => {
    if (resume) return resume;
    const profile = await get('/profile', new URLSearchParams(), ProfileSchema);
    return { account: profile.emailAddress, historyId: profile.historyId };
  };
  const { account, historyId } = await start();
  const names = await labelNames(get);
  let pageToken = resume?.full.pageToken ?? null;
  let done = new Set(resume?.full.done ?? []);
  let partial = pageToken !== null;
  if (resume) context.log.info({ fromFirstPage: !partial, done: done.size }, 'Gmail full sync resumes where it stopped');

  const save = async () => {
    const cursor: Cursor = { account, historyId, full: { pageToken, done: [...done] } };
    await context.saveProgress?.(cursor).catch((error: unknown) => context.log.warn({ err: error }, 'the full sync progress could not be stored'));
  };
  const firstPage = async () => {
    try {
      return await get('/messages', listQuery(pageToken), ListPageSchema);
    } catch (error) {
      // A page token kept from an earlier attempt that Gmail no longer takes: list from the top again.
      if (!(partial && error instanceof SourceRejectedError && error.status === 400)) throw error;
      context.log.warn('the stored Gmail page token was refused; listing from the first page again');
      pageToken = null;
      done = new Set();
      partial = false;
      return get('/messages', listQuery(null), ListPageSchema);
    }
  };

  const listed = new Set<string>();
  const hidden = new Set<string>();
  const write = writer(context, account, names, new Set(), hidden);
  for (let pages = 0; ; pages += 1) {
    if (pages >= MAX_PAGES) throw new SourceRejectedError(`Gmail listed more than ${MAX_PAGES} pages`, 0, 'too many pages');
    const page = pages === 0 ? await firstPage() : await get('/messages', listQuery(pageToken), ListPageSchema);
    const ids = [...new Set(page.messages.map((message) => message.id))];
    for (const id of ids) listed.add(id);
    try {
      const missing = await fetchEnvelopes(context, get, ids.filter((id) => !done.has(id)), write, done);
      for (const id of missing) listed.delete(id);
    } catch (error) {
      await save();
      throw error;
    }
    pageToken = page.nextPageToken ?? null;
    done = new Set();
    if (pageToken === null) break;
    await save();
  }

  const named = partial ? await listAll(get) : listed;
  const stale = (await context.cache.sourceIds(OBJECT)).filter((id) => !named.has(id) || hidden.has(id));
  if (stale.length > 0) await context.cache.remove(OBJECT, stale);
  return { mode: 'full', cursor: { account, historyId } satisfies Cursor };
}
