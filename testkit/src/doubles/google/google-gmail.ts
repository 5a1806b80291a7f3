import type { ServerResponse } from 'node:http';
import { googleError, opaque, pageOf, sendJson } from './google-http.ts';

export const GMAIL_DOUBLE_ADDRESS = 'demo.person@example.com';
const ME = `Demo Person <${GMAIL_DOUBLE_ADDRESS}>`;
const DAY_MS = 86_400_000;
const SYSTEM_LABELS = ['INBOX', 'SENT', 'DRAFT', 'SPAM', 'TRASH', 'UNREAD', 'STARRED', 'IMPORTANT', 'CATEGORY_PERSONAL', 'CATEGORY_UPDATES'];
type HistoryType = 'messageAdded' | 'messageDeleted' | 'labelAdded' | 'labelRemoved';

export type DoubleMessage = {
  id: string;
  threadId: string;
  labelIds: string[];
  /** Epoch milliseconds. */
  internalDate: number;
  headers: Array<{ name: string; value: string }>;
  sizeEstimate: number;
  historyId: number;
};
type HistoryEntry = { id: number; type: HistoryType; message: { id: string; threadId: string; labelIds: string[] }; labelIds?: string[] };
export type NewMessage = { from: string; to?: string; cc?: string; subject: string; daysAgo: number; labelIds?: string[]; threadId?: string };

/**
 * Gmail v1 for one mailbox (reference §5): `profile`, `labels`, `messages.list` (newest first, SPAM and
 * TRASH left out unless `includeSpamTrash`, `maxResults` paging with opaque `pageToken`s),
 * `messages.get` (`format=metadata` with repeated `metadataHeaders`; `full`/`raw` and `q` refused to
 * the metadata scope, as Google does), and `history.list` from a `startHistoryId` (`messagesAdded`,
 * `messagesDeleted`, `labelsAdded`, `labelsRemoved`, filtered by repeated `historyTypes`; history ids
 * grow with gaps; a start older than the kept history is 404). `state.getDelayMs` holds each
 * `messages.get` open so a test can see how many a client keeps in flight (`state.maxInFlight`).
 */
export function createGmailPart(options: { now: number }) {
  const messages = new Map<string, DoubleMessage>();
  const history: HistoryEntry[] = [];
  const userLabels = [{ id: 'Label_1', name: 'Receipts' }];
  let historyId = 1000;
  /** The oldest start history id still answered; older ones are 404 (Google keeps about a week, sometimes hours). */
  let oldestHistoryId = 0;
  let nextId = 1;
  const state = {
    pageSize: 4,
    historyPageSize: 3,
    getDelayMs: 0,
    inFlight: 0,
    maxInFlight: 0,
    gets: 0,
    /** Every access token expires as the `messages.get` with this number (counting from 1) arrives: a token running out mid-sync. */
    expireAccessTokensAtGet: undefined as number | undefined,
    /** The `messages.get` with this number (counting from 1) answers 429 once, and `onRateLimited` runs: a rate limit in the middle of a full sync. */
    rateLimitGetAt: undefined as number | undefined,
    onRateLimited: undefined as (() => void) | undefined,
  };
  // Gaps between history ids, as Gmail's (reference §5.4): clients must not count on consecutive ids.
  const bump = () => (historyId += 3);

  const record = (type: HistoryType, message: DoubleMessage, labelIds?: string[]) => {
    history.push({ id: bump(), type, message: { id: message.id, threadId: message.threadId, labelIds: [...message.labelIds] }, ...(labelIds ? { labelIds } : {}) });
    message.historyId = historyId;
  };

  function add(spec: NewMessage): DoubleMessage {
    const id = (0x18c0000000000 + nextId++ * 0x1f3).toString(16);
    const at = options.now - spec.daysAgo * DAY_MS;
    const headers = [
      { name: 'Date', value: new Date(at).toUTCString().replace('GMT', '+0000') },
      { name: 'From', value: spec.from },
      { name: 'To', value: spec.to ?? ME },
      ...(spec.cc ? [{ name: 'Cc', value: spec.cc }] : []),
      { name: 'Subject', value: spec.subject },
      { name: 'Message-ID', value: `<${id}@mail.example.com>` },
      { name: 'Received', value: 'from mail.example.com by mx.google.com' },
    ];
    const message: DoubleMessage = { id, threadId: spec.threadId ?? id, labelIds: spec.labelIds ?? ['INBOX', 'UNREAD', 'CATEGORY_PERSONAL'], internalDate: at, headers, sizeEstimate: 2_000 + nextId * 17, historyId };
    messages.set(id, message);
    record('messageAdded', message);
    return message;
  }

  const ada = '"Lovelace, Ada" <ada@example.com>';
  add({ from: ada, subject: 'Engine notes', daysAgo: 1, cc: 'Grace Hopper <grace@example.com>, alan@example.com', labelIds: ['INBOX', 'UNREAD', 'STARRED', 'IMPORTANT'] });
  const thread = add({ from: 'Ada L. <ADA@example.com>', subject: 'Re: Engine notes', daysAgo: 2, labelIds: ['INBOX'] });
  add({ from: ada, subject: 'Bernoulli numbers', daysAgo: 3, labelIds: ['INBOX', 'Label_1'] });
  add({ from: 'Grace Hopper <grace@example.com>', subject: 'Compiler draft', daysAgo: 1 });
  add({ from: 'Grace Hopper <grace@example.com>', subject: 'A moth in relay 70', daysAgo: 4, labelIds: ['INBOX'] });
  add({ from: 'Alan Turing <alan@example.com>', subject: 'Morphogenesis', daysAgo: 2 });
  for (const daysAgo of [20, 21, 22, 23]) add({ from: 'Alan Turing <alan@example.com>', subject: `Old thread ${daysAgo}`, daysAgo, labelIds: ['CATEGORY_UPDATES'] });
  add({ from: ME, to: ada, subject: 'Re: Engine notes', daysAgo: 1, threadId: thread.threadId, labelIds: ['SENT'] });
  add({ from: 'Prize Office <win@spam.example>', subject: 'You won', daysAgo: 1, labelIds: ['SPAM', 'UNREAD'] });

  const current = () => [...messages.values()];
  const visible = (message: DoubleMessage, query: URLSearchParams) => query.get('includeSpamTrash') === 'true' || !message.labelIds.some((label) => label === 'SPAM' || label === 'TRASH');

  function list(res: ServerResponse, query: URLSearchParams, metadataOnly: boolean) {
    if (metadataOnly && query.has('q')) return googleError(res, 403, 'forbidden', "Metadata scope does not support 'q' parameter");
    const labelIds = query.getAll('labelIds');
    const rows = current()
      .filter((message) => visible(message, query) && labelIds.every((label) => message.labelIds.includes(label)))
      .sort((a, b) => b.internalDate - a.internalDate || (a.id < b.id ? 1 : -1));
    const size = Math.min(Number(query.get('maxResults') ?? '100'), 500, state.pageSize);
    // Page tokens are opaque (reference §5.6). The double's carry the last message given, so mail that
    // arrives or goes between two pages shifts nothing; how Gmail's own behave is not documented (a guess).
    const listing = `${labelIds.join(',')}|${query.get('includeSpamTrash') ?? ''}`;
    const token = query.get('pageToken');
    const after = token ? opaque.open<{ listing: string; date: number; id: string }>(token) : undefined;
    if (token && (!after || after.listing !== listing)) return googleError(res, 400, 'invalidArgument', 'Invalid pageToken');
    const rest = after ? rows.filter((message) => message.internalDate < after.date || (message.internalDate === after.date && message.id < after.id)) : rows;
    const slice = rest.slice(0, size);
    const last = slice.at(-1);
    const next = rest.length > size && last ? opaque.seal({ listing, date: last.internalDate, id: last.id }) : undefined;
    return sendJson(res, 200, { messages: slice.map((message) => ({ id: message.id, threadId: message.threadId })), ...(next ? { nextPageToken: next } : {}), resultSizeEstimate: rows.length });
  }

  async function get(res: ServerResponse, id: string, query: URLSearchParams, metadataOnly: boolean) {
    const format = query.get('format') ?? 'full';
    if (metadataOnly && (format === 'full' || format === 'raw')) return googleError(res, 403, 'forbidden', `Metadata scope doesn't allow format ${format.toUpperCase()}`);
    state.gets += 1;
    if (state.gets === state.rateLimitGetAt) {
      state.rateLimitGetAt = undefined;
      state.onRateLimited?.();
      // Gmail "Resolve errors", 429 Too many requests: a per-user limit (concurrent requests, bandwidth),
      // "User-rate limit exceeded" with a time to retry; the time is given here as `Retry-After` (a guess).
      return googleError(res, 429, 'rateLimitExceeded', `User-rate limit exceeded.  Retry after ${new Date(Date.now() + 1_000).toISOString()}`, { status: 'RESOURCE_EXHAUSTED', headers: { 'retry-after': '1' } });
    }
    state.inFlight += 1;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    try {
      if (state.getDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, state.getDelayMs));
    } finally {
      state.inFlight -= 1;
    }
    const message = messages.get(id);
    if (!message) return googleError(res, 404, 'notFound', 'Requested entity was not found.');
    const wanted = new Set(query.getAll('metadataHeaders').map((name) => name.toLowerCase()));
    const headers = format === 'metadata' && wanted.size > 0 ? message.headers.filter((header) => wanted.has(header.name.toLowerCase())) : message.headers;
    return sendJson(res, 200, {
      id: message.id,
      threadId: message.threadId,
      labelIds: message.labelIds,
      historyId: String(message.historyId),
      internalDate: String(message.internalDate),
      sizeEstimate: message.sizeEstimate,
      ...(format === 'minimal' ? {} : { payload: { partId: '', mimeType: 'multipart/alternative', filename: '', headers } }),
    });
  }

  function listHistory(res: ServerResponse, query: URLSearchParams) {
    const start = query.get('startHistoryId');
    if (!start || !/^\d+$/.test(start)) return googleError(res, 400, 'invalidArgument', 'Invalid startHistoryId');
    if (BigInt(start) < BigInt(oldestHistoryId) || BigInt(start) > BigInt(historyId)) return googleError(res, 404, 'notFound', 'Requested entity was not found.');
    const types = query.getAll('historyTypes');
    const rows = history.filter((entry) => entry.id > Number(start) && (types.length === 0 || types.includes(entry.type)));
    const size = Math.min(Number(query.get('maxResults') ?? '100'), 500, state.historyPageSize);
    const page = pageOf(rows, query.get('pageToken'), size, `${start}|${types.join(',')}`);
    if (page === 'bad') return googleError(res, 400, 'invalidArgument', 'Invalid pageToken');
    const key = { messageAdded: 'messagesAdded', messageDeleted: 'messagesDeleted', labelAdded: 'labelsAdded', labelRemoved: 'labelsRemoved' } as const;
    const records = page.slice.map((entry) => ({
      id: String(entry.id),
      messages: [{ id: entry.message.id, threadId: entry.message.threadId }],
      [key[entry.type]]: [{ message: entry.message, ...(entry.labelIds ? { labelIds: entry.labelIds } : {}) }],
    }));
    return sendJson(res, 200, { ...(records.length > 0 ? { history: records } : {}), historyId: String(historyId), ...(page.next ? { nextPageToken: page.next } : {}) });
  }

  return {
    messages,
    state,
    add,
    /** Adds and removes labels of a message, each change one history record. */
    relabel(id: string, change: { add?: string[]; remove?: string[] }) {
      const message = messages.get(id);
      if (!message) throw new Error(`no message ${id}`);
      const added = (change.add ?? []).filter((label) => !message.labelIds.includes(label));
      const removed = (change.remove ?? []).filter((label) => message.labelIds.includes(label));
      message.labelIds = [...message.labelIds.filter((label) => !removed.includes(label)), ...added];
      if (added.length > 0) record('labelAdded', message, added);
      if (removed.length > 0) record('labelRemoved', message, removed);
    },
    /** Deletes a message for good (not to TRASH): a `messagesDeleted` record. */
    remove(id: string) {
      const message = messages.get(id);
      if (!message) throw new Error(`no message ${id}`);
      messages.delete(id);
      record('messageDeleted', message);
    },
    /** Every history id given so far is too old: `history.list` answers 404 until a start from the next `profile`. */
    expireHistory: () => void (oldestHistoryId = bump()),
    routes(res: ServerResponse, path: string, query: URLSearchParams, metadataOnly: boolean): Promise<void> | boolean {
      const base = '/gmail/v1/users/me';
      if (!path.startsWith(`${base}/`)) return false;
      const rest = path.slice(base.length);
      if (rest === '/profile') {
        const visibleCount = current().filter((message) => visible(message, new URLSearchParams())).length;
        sendJson(res, 200, { emailAddress: GMAIL_DOUBLE_ADDRESS, messagesTotal: visibleCount, threadsTotal: new Set(current().map((message) => message.threadId)).size, historyId: String(historyId) });
        return true;
      }
      if (rest === '/labels') {
        sendJson(res, 200, { labels: [...SYSTEM_LABELS.map((id) => ({ id, name: id, type: 'system' })), ...userLabels.map((label) => ({ ...label, type: 'user', messageListVisibility: 'show', labelListVisibility: 'labelShow' }))] });
        return true;
      }
      if (rest === '/messages') return list(res, query, metadataOnly), true;
      if (rest === '/history') return listHistory(res, query), true;
      const match = /^\/messages\/([^/]+)$/.exec(rest);
      if (match) return get(res, decodeURIComponent(match[1] ?? ''), query, metadataOnly);
      return false;
    },
  };
}
