import { z } from 'zod';
import { SIMPLEFIN, SimplefinAccessSchema } from '@pcg/shared/providers';
import type { Connector, ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceAuthError, SourceUnavailableError } from '../kit/source-errors.ts';
import { BRIDGE_ACCESS_REVOKED, BRIDGE_PAYMENT_REQUIRED, simplefinClassifier } from './simplefin-classifier.ts';
import { accountRecord, AccountSetSchema, bridgeErrors, childPrefix, dateOf, holdingRecord, transactionRecord, type AccountSet } from './simplefin-mapping.ts';

const ACCOUNT = 'finance.account';
const TRANSACTION = 'finance.transaction';
const HOLDING = 'finance.holding';
const DAY_S = 86_400;

/** The bridge expects at most about 24 requests a day (reference §2.4): never two syncs within an hour, whatever the interval. */
export const MIN_SYNC_GAP_MS = 60 * 60_000;
/** History asked for on the first sync. */
export const FIRST_WINDOW_DAYS = 90;
/** Each later sync asks again for this many days before the last one, so late-posting rows and removals are seen. */
export const OVERLAP_DAYS = 10;

/** When the bridge was last asked; the next window starts `OVERLAP_DAYS` before it. */
const CursorSchema = z.object({ requestedAt: z.number().int().positive() });

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

/** Day-aligned, so "posted on or after the start" and "posted_on ≥ the start's date" are the same rows. */
function windowStart(cursor: z.infer<typeof CursorSchema> | undefined, now: number): number {
  const from = cursor ? cursor.requestedAt / 1000 - OVERLAP_DAYS * DAY_S : now / 1000 - FIRST_WINDOW_DAYS * DAY_S;
  return Math.floor(from / DAY_S) * DAY_S;
}

async function readAccounts(context: ConnectorContext, startDate: number): Promise<AccountSet> {
  const { url, authorization } = accessOf(context);
  const client = createSourceClient({
    what: 'the bridge',
    classifier: simplefinClassifier,
    timeoutMs: context.requestTimeoutMs,
    signal: context.signal,
    // The Basic credentials go only to the access URL's own origin; no redirect is followed.
    maxRedirects: 0,
  });
  const target = new URL(`${url.toString().replace(/\/+$/, '')}/accounts`);
  target.searchParams.set('start-date', String(startDate));
  target.searchParams.set('pending', '1');
  let raw: unknown;
  try {
    raw = await client.json(target, { auth: { authorization } });
  } catch (error) {
    if (error instanceof SourceAuthError) throw new SourceAuthError(/HTTP 402/.test(error.message) ? BRIDGE_PAYMENT_REQUIRED : BRIDGE_ACCESS_REVOKED);
    throw error;
  }
  const parsed = AccountSetSchema.safeParse(raw);
  if (!parsed.success) throw new SourceUnavailableError('the bridge answered /accounts in an unexpected shape');
  return parsed.data;
}

/**
 * Removes what the bridge no longer lists, only when it reported no error (a bank that failed to answer
 * is not a bank that is gone): accounts that vanished go with their transactions and holdings; inside
 * the window, transactions of a listed account that were not sent again.
 */
async function removeVanished(context: ConnectorContext, set: AccountSet, sentTx: Set<string>, startDate: number): Promise<void> {
  const listed = new Set(set.accounts.map((account) => account.id));
  const vanished = (await context.cache.sourceIds(ACCOUNT)).filter((id) => !listed.has(id));
  if (vanished.length > 0) {
    const prefixes = vanished.map(childPrefix);
    const owned = (ids: string[]) => ids.filter((id) => prefixes.some((prefix) => id.startsWith(prefix)));
    await context.cache.remove(TRANSACTION, owned(await context.cache.sourceIds(TRANSACTION)));
    await context.cache.remove(HOLDING, owned(await context.cache.sourceIds(HOLDING)));
    await context.cache.remove(ACCOUNT, vanished);
  }
  const listedPrefixes = [...listed].map(childPrefix);
  const inWindow = await context.cache.sourceIds(TRANSACTION, { field: 'posted_on', from: dateOf(startDate) ?? '1970-01-01' });
  const gone = inWindow.filter((id) => !sentTx.has(id) && listedPrefixes.some((prefix) => id.startsWith(prefix)));
  await context.cache.remove(TRANSACTION, gone);
}

async function sync(context: ConnectorContext): Promise<SyncOutcome> {
  const previous = CursorSchema.safeParse(context.cursor);
  const cursor = previous.success ? previous.data : undefined;
  const now = Date.now();
  if (cursor && now - cursor.requestedAt < MIN_SYNC_GAP_MS) {
    const next = new Date(cursor.requestedAt + MIN_SYNC_GAP_MS).toISOString();
    return { mode: 'incremental', cursor, notRun: `the bridge is asked at most once an hour; the next sync may run after ${next}` };
  }
  const startDate = windowStart(cursor, now);
  const set = await readAccounts(context, startDate);

  await context.cache.upsert(ACCOUNT, set.accounts.map(accountRecord));
  const ids = await context.cache.idsOf(ACCOUNT, set.accounts.map((account) => account.id));
  const transactions = [];
  const holdings = [];
  let unreadable = 0;
  for (const account of set.accounts) {
    for (const tx of account.transactions) {
      const record = transactionRecord(account, ids.get(account.id), tx);
      if (record) transactions.push(record);
      else unreadable += 1;
    }
    for (const holding of account.holdings ?? []) holdings.push(holdingRecord(account, ids.get(account.id), holding));
  }
  await context.cache.upsert(TRANSACTION, transactions);
  await context.cache.upsert(HOLDING, holdings);

  const errors = bridgeErrors(set);
  if (errors.length === 0) await removeVanished(context, set, new Set(transactions.map((tx) => tx.source_id)), startDate);
  else context.log.warn({ errors: errors.length }, 'the bridge reported errors; nothing is removed this time');
  if (unreadable > 0) context.log.warn({ unreadable }, 'skipped bridge transactions whose amount is not a number');
  const notice = errors.length > 0 ? `the bridge reported: ${errors.join('; ')}`.slice(0, 2000) : undefined;
  return { mode: cursor ? 'incremental' : 'full', cursor: { requestedAt: now }, ...(notice ? { notice } : {}) };
}

/**
 * The bank-link bridge (SimpleFIN, reference §2). One connection holds every bank linked at the bridge
 * (spec 2.5): banks appear or disappear with the next sync. The bridge has no cursor and no deletion
 * signal, so each sync asks for a window reaching back over the last one and finds removals by diffing.
 */
export const simplefinConnector: Connector = {
  provider: SIMPLEFIN,
  actions: [],
  sync,
};
