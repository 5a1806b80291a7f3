import { z } from 'zod';
import { SIMPLEFIN, SimplefinAccessSchema } from '@pcg/shared/providers';
import type { Connector, ConnectorContext, SyncOutcome } from '../connector-types.ts';
import type { Outbound } from '@pcg/shared/outbound';
import { createSourceClient } from '../kit/source-client.ts';
import { createSourceOutbound } from '../kit/source-outbound.ts';
import { SourceAuthError, SourceRejectedError, SourceUnavailableError } from '../kit/source-errors.ts';
import { BRIDGE_ACCESS_REVOKED, BRIDGE_PAYMENT_REQUIRED, simplefinClassifier } from './simplefin-classifier.ts';
import { accountKeys, naturalKey } from './simplefin-keys.ts';
import { accountRecord, AccountSetSchema, bridgeErrors, childPrefix, institutionOf, holdingRecord, transactionRecord, type AccountSet, type BridgeAccount } from './simplefin-mapping.ts';
import { planChunks, windowStart, type Chunk } from './simplefin-window.ts';

const ACCOUNT = 'finance.account';
const TRANSACTION = 'finance.transaction';
const HOLDING = 'finance.holding';

/** The bridge expects at most about 24 requests a day (reference §2.4): never two syncs within an hour, whatever the interval. */
export const MIN_SYNC_GAP_MS = 60 * 60_000;
/** Each later sync asks again for this many days before what was fetched last, so late-posting rows and removals are seen. */
export const OVERLAP_DAYS = 10;
/** Redirects followed on `/accounts`, as the bridge guide's `curl -L` does. */
const MAX_REDIRECTS = 5;
/** What the operator does when the outbound policy refuses an address of the bridge (issue 32). */
export const BRIDGE_ADDRESS_FIX = 'claim a new setup token from the bridge; if this repeats, the bridge is sending the gateway somewhere it may not go';

/**
 * `requestedAt`: when the bridge was last asked (the hour between syncs). `fetchedThrough`: how far its
 * transactions were fetched (absent in cursors written before: then `requestedAt`). `legacy`: rows cached
 * before accounts were keyed by connection, and the account each now belongs to (see `simplefin-keys.ts`).
 */
const CursorSchema = z.object({
  requestedAt: z.number().int().positive(),
  fetchedThrough: z.number().int().positive().optional(),
  legacy: z.record(z.string(), z.string()).optional(),
});
type Cursor = z.infer<typeof CursorSchema>;

function accessOf(context: ConnectorContext): { url: URL; authorization: string } {
  const parsed = SimplefinAccessSchema.safeParse(context.credentials);
  if (!parsed.success) throw new SourceAuthError('the stored bridge access is incomplete; claim a new setup token');
  const url = new URL(parsed.data.accessUrl);
  // WHATWG fetch refuses a URL with user:pass (reference §2.1): the pair goes in a Basic header instead.
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  url.username = '';
  url.password = '';
  return { url, authorization };
}

/**
 * One `/accounts` request. Redirects are followed, as the bridge guide's `curl -L "${ACCESS_URL}/accounts?version=2"`
 * does, and like curl (which sends user and password only to the host it was given) the Basic credentials
 * ride only on hops to the access URL's own origin: the kit's client adds them to a hop on another origin
 * never (a scheme, host or port change). A refusal that came from another origin says so, since the
 * access itself may be fine. Every hop is dialled through the outbound policy (issue 32): the access URL
 * and wherever the bridge redirects are addresses a source gave, so a link-local or metadata address, or
 * the gateway's own port, is refused before anything is sent.
 */
async function readChunk(context: ConnectorContext, outbound: Outbound, chunk: Chunk): Promise<AccountSet> {
  const { url, authorization } = accessOf(context);
  let lastHop = url;
  let downgraded = false;
  const client = createSourceClient({
    what: 'the bridge',
    classifier: simplefinClassifier,
    timeoutMs: context.requestTimeoutMs,
    signal: context.signal,
    maxRedirects: MAX_REDIRECTS,
    refusedAddressFix: BRIDGE_ADDRESS_FIX,
    fetch: (input, init) => {
      lastHop = new URL(input instanceof Request ? input.url : input);
      // The protocol's checklist: an application "only makes requests to SSL/TLS URLs (i.e. HTTPS and never HTTP)".
      downgraded = url.protocol === 'https:' && lastHop.protocol !== 'https:';
      return downgraded ? Promise.reject(new Error('redirect to plain http')) : outbound.fetch(input, init);
    },
  });
  const target = new URL(`${url.toString().replace(/\/+$/, '')}/accounts`);
  target.searchParams.set('version', '2');
  target.searchParams.set('start-date', String(chunk.start));
  if (chunk.end !== undefined) target.searchParams.set('end-date', String(chunk.end));
  target.searchParams.set('pending', '1');
  let raw: unknown;
  try {
    raw = await client.json(target, { auth: { authorization } });
  } catch (error) {
    if (downgraded) throw new SourceRejectedError(`the bridge redirected to ${lastHop.origin} over plain http, which SimpleFIN never allows; it was not followed`, 0, 'redirect to http');
    if (!(error instanceof SourceAuthError)) throw error;
    if (lastHop.origin !== url.origin) {
      throw new SourceAuthError(`the bridge sent the request on to ${lastHop.origin}, which refused it without the access (its credentials go only to ${url.origin}); claim a new setup token if the bridge moved`);
    }
    throw new SourceAuthError(/HTTP 402/.test(error.message) ? BRIDGE_PAYMENT_REQUIRED : BRIDGE_ACCESS_REVOKED);
  }
  const parsed = AccountSetSchema.safeParse(raw);
  if (!parsed.success) throw new SourceUnavailableError('the bridge answered /accounts in an unexpected shape');
  return parsed.data;
}

type Fetched = { set: AccountSet; fetchedThrough: number; reachedNow: boolean };

/**
 * The window in requests the bridge serves whole (`planChunks`), oldest first, merged: an account as the
 * newest answer shows it (an answer with an end-date carries the balance of that date), its transactions
 * from every answer, the errors of all.
 */
async function readWindow(context: ConnectorContext, outbound: Outbound, start: number, nowMs: number): Promise<Fetched> {
  const chunks = planChunks(start, Math.floor(nowMs / 1000));
  const accounts = new Map<string, BridgeAccount>();
  const transactions = new Map<string, Map<string, BridgeAccount['transactions'][number]>>();
  const merged: AccountSet = { errors: [], errlist: [], connections: [], accounts: [] };
  const connections = new Map<string, AccountSet['connections'][number]>();
  for (const chunk of chunks) {
    const set = await readChunk(context, outbound, chunk);
    merged.errors.push(...set.errors);
    merged.errlist.push(...set.errlist);
    for (const connection of set.connections) connections.set(connection.conn_id, connection);
    for (const account of set.accounts) {
      const at = naturalKey(account);
      accounts.set(at, account);
      const seen = transactions.get(at) ?? new Map();
      for (const tx of account.transactions) seen.set(tx.id, tx);
      transactions.set(at, seen);
    }
  }
  merged.connections = [...connections.values()];
  merged.accounts = [...accounts].map(([at, account]) => ({ ...account, transactions: [...(transactions.get(at)?.values() ?? [])] }));
  const last = chunks.at(-1);
  const reachedNow = last?.end === undefined;
  return { set: merged, fetchedThrough: reachedNow ? nowMs : (last?.end ?? 0) * 1000, reachedNow };
}

/**
 * Removes what the bridge no longer lists, only when it reported no error (a bank that failed to answer
 * is not a bank that is gone): accounts that vanished go with their transactions and holdings; inside
 * the window, when it was fetched up to now, transactions of a listed account that were not sent again.
 */
async function removeVanished(context: ConnectorContext, listed: Set<string>, sentTx: Set<string>, startDate: string | null): Promise<void> {
  const vanished = (await context.cache.sourceIds(ACCOUNT)).filter((key) => !listed.has(key));
  if (vanished.length > 0) {
    const prefixes = vanished.map(childPrefix);
    const owned = (ids: string[]) => ids.filter((id) => prefixes.some((prefix) => id.startsWith(prefix)));
    await context.cache.remove(TRANSACTION, owned(await context.cache.sourceIds(TRANSACTION)));
    await context.cache.remove(HOLDING, owned(await context.cache.sourceIds(HOLDING)));
    await context.cache.remove(ACCOUNT, vanished);
  }
  if (startDate === null) return;
  const listedPrefixes = [...listed].map(childPrefix);
  const inWindow = await context.cache.sourceIds(TRANSACTION, { field: 'posted_on', from: startDate });
  const gone = inWindow.filter((id) => !sentTx.has(id) && listedPrefixes.some((prefix) => id.startsWith(prefix)));
  await context.cache.remove(TRANSACTION, gone);
}

async function write(context: ConnectorContext, set: AccountSet, cursor: Cursor | undefined) {
  const byConnection = new Map(set.connections.map((connection) => [connection.conn_id, connection]));
  const { keys, claims } = accountKeys(set.accounts, new Set(await context.cache.sourceIds(ACCOUNT)), cursor?.legacy ?? {});
  const keyOf = (account: BridgeAccount) => keys.get(account) ?? '';
  await context.cache.upsert(ACCOUNT, set.accounts.map((account) => accountRecord(account, keyOf(account), institutionOf(account, account.conn_id ? byConnection.get(account.conn_id) : undefined))));
  const ids = await context.cache.idsOf(ACCOUNT, set.accounts.map(keyOf));
  const transactions = [];
  const holdings = [];
  let unreadable = 0;
  for (const account of set.accounts) {
    const key = keyOf(account);
    for (const tx of account.transactions) {
      const record = transactionRecord(account, key, ids.get(key), tx);
      if (record) transactions.push(record);
      else unreadable += 1;
    }
    for (const holding of account.holdings ?? []) holdings.push(holdingRecord(account, key, ids.get(key), holding));
  }
  await context.cache.upsert(TRANSACTION, transactions);
  await context.cache.upsert(HOLDING, holdings);
  if (unreadable > 0) context.log.warn({ unreadable }, 'skipped bridge transactions whose amount is not a number');
  return { listed: new Set(set.accounts.map(keyOf)), sentTx: new Set(transactions.map((tx) => tx.source_id)), claims };
}

async function sync(context: ConnectorContext, outbound: Outbound): Promise<SyncOutcome> {
  const previous = CursorSchema.safeParse(context.cursor);
  const cursor = previous.success ? previous.data : undefined;
  const now = Date.now();
  if (cursor && now - cursor.requestedAt < MIN_SYNC_GAP_MS) {
    const next = new Date(cursor.requestedAt + MIN_SYNC_GAP_MS).toISOString();
    return { mode: 'incremental', cursor, notRun: `the bridge is asked at most once an hour; the next sync may run after ${next}` };
  }
  const start = windowStart(cursor ? (cursor.fetchedThrough ?? cursor.requestedAt) : undefined, now, OVERLAP_DAYS);
  const { set, fetchedThrough, reachedNow } = await readWindow(context, outbound, start, now);
  const { listed, sentTx, claims } = await write(context, set, cursor);

  const errors = bridgeErrors(set);
  // A window that stopped short of now (a long gap, fetched over several syncs) removes no transaction: later rows were not asked for.
  if (errors.length === 0) await removeVanished(context, listed, sentTx, reachedNow ? new Date(start * 1000).toISOString().slice(0, 10) : null);
  else context.log.warn({ errors: errors.length }, 'the bridge reported errors; nothing is removed this time');
  const notice = errors.length > 0 ? `the bridge reported: ${errors.join('; ')}`.slice(0, 2000) : undefined;
  const next: Cursor = { requestedAt: now, fetchedThrough, ...(Object.keys(claims).length > 0 ? { legacy: claims } : {}) };
  return { mode: cursor ? 'incremental' : 'full', cursor: next, ...(notice ? { notice } : {}) };
}

/**
 * The bank-link bridge (SimpleFIN, reference §2). One connection holds every bank linked at the bridge
 * (spec 2.5): banks appear or disappear with the next sync. The bridge has no cursor and no deletion
 * signal, so each sync asks for a window reaching back over the last one and finds removals by diffing.
 */
export function createSimplefinConnector(options: { outbound: Outbound }): Connector {
  return {
    provider: SIMPLEFIN,
    actions: [],
    sync: (context) => sync(context, options.outbound),
  };
}

/** The connector with the gateway's default ports; the sync-worker makes its own with the configured ones. */
export const simplefinConnector: Connector = createSimplefinConnector({ outbound: createSourceOutbound() });
