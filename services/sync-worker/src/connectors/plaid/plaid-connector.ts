import { z } from 'zod';
import { PLAID, PlaidItemCredentialsSchema, realOrigins, type RebaseUrl } from '@pcg/shared/providers';
import type { Connector, ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { SourceAuthError, SourceRejectedError, SourceUnavailableError } from '../kit/source-errors.ts';
import { createPlaidApi, SyncMutationError, type PlaidApi, type PlaidApp, type PlaidItem, type PlaidTransaction } from './plaid-api.ts';
import { NEEDS_PERSON, reasonOf } from './plaid-classifier.ts';
import { accountRecord, domainOf, holdingRecord, transactionRecord, type ItemContext } from './plaid-mapping.ts';

const ACCOUNT = 'finance.account';
const TRANSACTION = 'finance.transaction';
const HOLDING = 'finance.holding';

/** Restarts of the whole `/transactions/sync` loop before the sync is retried later instead. */
export const MAX_LOOP_RESTARTS = 3;

/** What the connector keeps between syncs: the cursor reached at the end of the last complete loop. */
const CursorSchema = z.object({ transactions: z.string().min(1).max(1024).optional() });

export type PlaidConnectorOptions = {
  /** The operator's application (client id, secret, environment), read when a sync starts; null when not saved. */
  loadApp: () => Promise<PlaidApp | null>;
  rebaseUrl?: RebaseUrl;
  /** Transactions per `/transactions/sync` page (1–500). */
  pageSize?: number;
};

type TransactionChanges = { upserts: Map<string, PlaidTransaction>; removed: Set<string>; nextCursor: string | undefined };

/**
 * One whole `/transactions/sync` loop from `start` (reference §1.4): pages are collected while
 * `has_more`, and only a loop that reached its end counts; when the data changed during paging
 * (`TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION`) the whole loop starts again from `start`, the
 * partial pages discarded. Before the item's first data is ready the cursor comes back empty: nothing
 * changes and the next sync starts from the beginning again.
 */
async function readTransactionChanges(api: PlaidApi, accessToken: string, start: string | undefined, pageSize: number, context: ConnectorContext): Promise<TransactionChanges> {
  for (let attempt = 0; attempt <= MAX_LOOP_RESTARTS; attempt += 1) {
    const upserts = new Map<string, PlaidTransaction>();
    const removed = new Set<string>();
    let cursor = start;
    try {
      for (;;) {
        const page = await api.syncPage(accessToken, cursor, pageSize);
        // Per page: added, then modified, then removed (each later change of an id wins).
        for (const tx of [...page.added, ...page.modified]) {
          removed.delete(tx.transaction_id);
          upserts.set(tx.transaction_id, tx);
        }
        for (const gone of page.removed) {
          upserts.delete(gone.transaction_id);
          removed.add(gone.transaction_id);
        }
        if (page.next_cursor === '') return { upserts, removed, nextCursor: start };
        cursor = page.next_cursor;
        if (!page.has_more) return { upserts, removed, nextCursor: cursor };
      }
    } catch (error) {
      if (!(error instanceof SyncMutationError)) throw error;
      context.log.info({ attempt: attempt + 1 }, 'transactions changed during paging; restarting the sync loop from its first cursor');
    }
  }
  throw new SourceUnavailableError(`the bank aggregator's transactions kept changing during paging (${MAX_LOOP_RESTARTS + 1} tries); the sync will run again`);
}

async function itemContext(api: PlaidApi, item: PlaidItem, context: ConnectorContext): Promise<ItemContext> {
  let institutionName = item.institution_name ?? null;
  let institutionDomain: string | null = null;
  if (item.institution_id) {
    try {
      const institution = await api.institution(item.institution_id);
      institutionName = institution.name;
      institutionDomain = domainOf(institution.url);
    } catch (error) {
      // The domain only helps matching accounts across providers; a sync does not fail for it.
      context.log.warn({ errName: (error as Error).name }, 'could not read the institution; its domain stays unknown this time');
    }
  }
  const consent = item.consent_expiration_time ? new Date(item.consent_expiration_time) : null;
  return { institutionName, institutionDomain, consentExpiresAt: consent && !Number.isNaN(consent.getTime()) ? consent.toISOString() : null, syncedAt: new Date().toISOString() };
}

/**
 * The item was initialised with Investments (`products`, `billed_products`) and, where consent is recorded,
 * the person consented to it. `consented_products` is optional in Plaid's OpenAPI file (Data Transparency
 * Messaging items only): absent or empty, it records nothing, and an item without the consent answers
 * ADDITIONAL_CONSENT_REQUIRED, which reads as no holdings.
 */
export function hasInvestments(item: Pick<PlaidItem, 'products' | 'billed_products' | 'consented_products'>): boolean {
  const initialised = [...item.products, ...item.billed_products].includes('investments');
  const consented = item.consented_products ?? [];
  return initialised && (consented.length === 0 || consented.includes('investments'));
}

export function createPlaidConnector(options: PlaidConnectorOptions): Connector {
  const pageSize = Math.min(Math.max(options.pageSize ?? 500, 1), 500);

  async function sync(context: ConnectorContext): Promise<SyncOutcome> {
    const credentials = PlaidItemCredentialsSchema.safeParse(context.credentials);
    if (!credentials.success) throw new SourceAuthError("the stored link to the bank is incomplete; open the aggregator's sign-in again");
    const app = await options.loadApp();
    if (!app?.environment) throw new SourceRejectedError("the bank aggregator's application credentials are not saved; save them in the Console", 0, 'not configured');
    const api = createPlaidApi({ app: { ...app, environment: app.environment }, rebaseUrl: options.rebaseUrl ?? realOrigins, timeoutMs: context.requestTimeoutMs, signal: context.signal });
    const { accessToken } = credentials.data;
    const previous = CursorSchema.safeParse(context.cursor ?? {});
    const start = previous.success ? previous.data.transactions : undefined;

    // The item's health first: a login to repair stops the sync before anything is written.
    const item = await api.item(accessToken);
    if (item.error && NEEDS_PERSON.has(item.error.error_code)) throw new SourceAuthError(reasonOf(item.error));
    const about = await itemContext(api, item, context);

    const accounts = await api.accounts(accessToken);
    await context.cache.upsert(ACCOUNT, accounts.map((account) => accountRecord(account, about)));
    const ids = await context.cache.idsOf(ACCOUNT, accounts.map((account) => account.account_id));

    const changes = await readTransactionChanges(api, accessToken, start, pageSize, context);
    const records = [];
    let unreadable = 0;
    for (const tx of changes.upserts.values()) {
      const record = transactionRecord(tx, ids.get(tx.account_id));
      if (record) records.push(record);
      else unreadable += 1;
    }
    await context.cache.upsert(TRANSACTION, records);
    await context.cache.remove(TRANSACTION, [...changes.removed]);
    if (unreadable > 0) context.log.warn({ unreadable }, 'skipped aggregator transactions whose amount is not a number');

    // Holdings only from an item that has the Investments product and the person's consent to it: asked
    // of any other item, the aggregator answers an error (PRODUCTS_NOT_SUPPORTED, ADDITIONAL_CONSENT_REQUIRED).
    const { holdings, securities } = hasInvestments(item) ? await api.holdings(accessToken) : { holdings: [], securities: [] };
    const byId = new Map(securities.map((security) => [security.security_id, security]));
    const held = holdings.map((holding) => holdingRecord(holding, byId.get(holding.security_id), ids.get(holding.account_id), about.syncedAt));
    await context.cache.upsert(HOLDING, held);
    const listed = new Set(held.map((holding) => holding.source_id));
    await context.cache.remove(HOLDING, (await context.cache.sourceIds(HOLDING)).filter((id) => !listed.has(id)));

    const notice = item.error ? `the bank aggregator reports ${item.error.error_code} for this bank` : undefined;
    return { mode: start ? 'incremental' : 'full', cursor: changes.nextCursor ? { transactions: changes.nextCursor } : {}, ...(notice ? { notice } : {}) };
  }

  return { provider: PLAID, actions: [], sync };
}
