import { parse as parseLossless } from 'lossless-json';
import { z } from 'zod';
import { PLAID, type LinkEnvironment, type RebaseUrl } from '@pcg/shared/providers';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceAuthError, SourceRejectedError, SourceUnavailableError } from '../kit/source-errors.ts';
import type { SourceAnswer } from '../kit/source-verdict.ts';
import { plaidClassifier, reasonOf } from './plaid-classifier.ts';

/** The operator's application at the aggregator, as saved in the Console (sealed in `provider_apps`). */
export type PlaidApp = { clientId: string; clientSecret: string; environment: LinkEnvironment };

/**
 * Numbers arrive as their source text (lossless-json), never as a float: every schema below reads a
 * money value as the digits the aggregator sent.
 */
const Decimal = z.string().regex(/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/);
const Text = (max: number) => z.string().max(max);

export const PlaidErrorSchema = z.object({
  error_type: Text(64),
  error_code: Text(128),
  error_message: Text(2000).nullish(),
  display_message: Text(2000).nullish(),
});
export type PlaidError = z.infer<typeof PlaidErrorSchema>;

const BalancesSchema = z.object({
  available: Decimal.nullish(),
  current: Decimal.nullish(),
  limit: Decimal.nullish(),
  iso_currency_code: Text(8).nullish(),
  unofficial_currency_code: Text(64).nullish(),
});
export const AccountSchema = z.object({
  account_id: Text(256).min(1),
  name: Text(500),
  official_name: Text(500).nullish(),
  mask: Text(16).nullish(),
  type: Text(64),
  subtype: Text(64).nullish(),
  balances: BalancesSchema,
});
export type PlaidAccount = z.infer<typeof AccountSchema>;

export const ItemSchema = z.object({
  item_id: Text(256).min(1),
  institution_id: Text(128).nullish(),
  institution_name: Text(500).nullish(),
  error: PlaidErrorSchema.nullish(),
  consent_expiration_time: Text(64).nullish(),
  products: z.array(Text(64)).default([]),
  billed_products: z.array(Text(64)).default([]),
  /** Absent on items made before consent was recorded; present and without a product, the person did not consent to it. */
  consented_products: z.array(Text(64)).optional(),
});
export type PlaidItem = z.infer<typeof ItemSchema>;

export const TransactionSchema = z.object({
  transaction_id: Text(256).min(1),
  account_id: Text(256).min(1),
  amount: Decimal,
  iso_currency_code: Text(8).nullish(),
  unofficial_currency_code: Text(64).nullish(),
  date: z.iso.date(),
  authorized_date: z.iso.date().nullish(),
  name: Text(2000).nullish(),
  merchant_name: Text(500).nullish(),
  pending: z.boolean(),
  personal_finance_category: z.object({ primary: Text(128), detailed: Text(256).nullish() }).nullish(),
});
export type PlaidTransaction = z.infer<typeof TransactionSchema>;

const SyncPageSchema = z.object({
  added: z.array(TransactionSchema),
  modified: z.array(TransactionSchema),
  removed: z.array(z.object({ transaction_id: Text(256).min(1), account_id: Text(256).nullish() })),
  next_cursor: Text(1024),
  has_more: z.boolean(),
  transactions_update_status: Text(64).optional(),
});
export type SyncPage = z.infer<typeof SyncPageSchema>;

const SecuritySchema = z.object({
  security_id: Text(256).min(1),
  name: Text(500).nullish(),
  ticker_symbol: Text(64).nullish(),
  close_price: Decimal.nullish(),
});
export const HoldingSchema = z.object({
  account_id: Text(256).min(1),
  security_id: Text(256).min(1),
  institution_price: Decimal,
  institution_price_as_of: z.iso.date().nullish(),
  institution_value: Decimal,
  cost_basis: Decimal.nullish(),
  quantity: Decimal,
  iso_currency_code: Text(8).nullish(),
  unofficial_currency_code: Text(64).nullish(),
});
export type PlaidHolding = z.infer<typeof HoldingSchema>;
const HoldingsSchema = z.object({ holdings: z.array(HoldingSchema), securities: z.array(SecuritySchema) });
export type PlaidHoldings = z.infer<typeof HoldingsSchema>;

const LinkTokenSchema = z.object({ link_token: Text(512).min(1), hosted_link_url: z.url({ protocol: /^https?$/ }).optional(), expiration: Text(64).optional() });
const LinkSessionsSchema = z.object({
  link_sessions: z
    .array(
      z.object({
        finished_at: Text(64).nullish(),
        results: z.object({ item_add_results: z.array(z.object({ public_token: Text(512).min(1) })).default([]) }).nullish(),
      }),
    )
    .default([]),
});
const ExchangeSchema = z.object({ access_token: Text(512).min(1), item_id: Text(256).min(1) });
const InstitutionSchema = z.object({ institution: z.object({ institution_id: Text(128), name: Text(500), url: Text(2000).nullish() }) });

/**
 * The aggregator's answers that an item has no holdings to give (Plaid's Item and Invalid Input errors
 * pages): the item lacks the Investments product, the person did not consent to it, or no account of
 * the item is an investment account Plaid can read. None of them is a failure of the sync.
 */
const NO_HOLDINGS: ReadonlySet<string> = new Set(['PRODUCTS_NOT_SUPPORTED', 'ADDITIONAL_CONSENT_REQUIRED', 'NO_INVESTMENT_ACCOUNTS', 'NO_INVESTMENT_AUTH_ACCOUNTS']);

/** The aggregator's answers that the item is not (any more) there: a removal has nothing left to do. */
const ITEM_GONE: ReadonlySet<string> = new Set(['ITEM_NOT_FOUND', 'INVALID_ACCESS_TOKEN']);

/** What an HTTP header value may hold of the application's credentials. */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

/** The whole `/transactions/sync` loop must start again from its first cursor (reference §1.4). */
export class SyncMutationError extends Error {
  constructor() {
    super('the transactions changed during paging');
    this.name = 'SyncMutationError';
  }
}

export type PlaidApiOptions = { app: PlaidApp; rebaseUrl: RebaseUrl; timeoutMs: number; signal?: AbortSignal };

/**
 * A typed client of the aggregator's API over the connector kit's source client (one HTTP path, one
 * classifier, redirects refused: the application's secret rides in the headers). Each answer is read
 * with lossless-json and checked with zod; an error body is read once more to tell the operator which
 * error it was.
 */
export function createPlaidApi(options: PlaidApiOptions) {
  const link = PLAID.link;
  if (!link) throw new Error('the aggregator provider declares no link');
  const base = options.rebaseUrl(link.apiBaseUrls[options.app.environment]).replace(/\/+$/, '');
  const client = createSourceClient({ what: 'the bank aggregator', classifier: plaidClassifier, timeoutMs: options.timeoutMs, signal: options.signal, maxRedirects: 0 });

  /** `settled` turns an error answer that means the work is already done into a value instead of a throw. */
  async function call<T>(path: string, body: Record<string, unknown>, schema: z.ZodType<T>, settled?: (error: PlaidError) => T | undefined): Promise<T> {
    if (!HEADER_SAFE.test(options.app.clientId + options.app.clientSecret)) {
      throw new SourceRejectedError('the bank aggregator was not asked: the saved client id or secret is not printable ASCII', 0, 'client id or secret unusable in a header');
    }
    let failed: SourceAnswer | undefined;
    let text: string;
    try {
      ({ text } = await client.send(`${base}${path}`, {
        method: 'POST',
        body: { json: body },
        headers: { 'Plaid-Version': '2020-09-14' },
        auth: { 'PLAID-CLIENT-ID': options.app.clientId, 'PLAID-SECRET': options.app.clientSecret },
        classify: (answer) => {
          failed = answer;
          return undefined;
        },
      }));
    } catch (error) {
      const plaidError = failed ? readPlaidError(failed.text) : undefined;
      const done = plaidError && settled?.(plaidError);
      if (done !== undefined) return done;
      if (plaidError?.error_code === 'TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION') throw new SyncMutationError();
      if (plaidError && error instanceof SourceAuthError) throw new SourceAuthError(reasonOf(plaidError));
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = parseLossless(text, null, (digits: string) => digits);
    } catch {
      throw new SourceUnavailableError(`the bank aggregator answered ${path} with something that is not JSON`);
    }
    const checked = schema.safeParse(parsed);
    if (!checked.success) throw new SourceUnavailableError(`the bank aggregator answered ${path} in an unexpected shape`);
    return checked.data;
  }

  return {
    createLinkToken: (request: { userId: string; completionRedirect: string; accessToken?: string }) =>
      call(
        '/link/token/create',
        {
          client_name: link.clientName,
          language: 'en',
          country_codes: [...link.countryCodes],
          user: { client_user_id: request.userId },
          hosted_link: { completion_redirect_uri: request.completionRedirect },
          ...(request.accessToken
            ? { access_token: request.accessToken }
            : { products: [...link.products], optional_products: [...link.optionalProducts], transactions: { days_requested: 730 } }),
        },
        LinkTokenSchema,
      ),
    /** The public tokens of the link's finished sessions (empty while the person has not finished, and in update mode). */
    async linkResults(linkToken: string): Promise<{ finished: boolean; publicTokens: string[] }> {
      const { link_sessions: sessions } = await call('/link/token/get', { link_token: linkToken }, LinkSessionsSchema);
      const finished = sessions.filter((session) => session.finished_at);
      return { finished: finished.length > 0, publicTokens: finished.flatMap((session) => session.results?.item_add_results.map((result) => result.public_token) ?? []) };
    },
    exchange: (publicToken: string) => call('/item/public_token/exchange', { public_token: publicToken }, ExchangeSchema),
    item: (accessToken: string) => call('/item/get', { access_token: accessToken }, z.object({ item: ItemSchema })).then((answer) => answer.item),
    institution: (institutionId: string) =>
      call('/institutions/get_by_id', { institution_id: institutionId, country_codes: [...link.countryCodes], options: { include_optional_metadata: true } }, InstitutionSchema).then(
        (answer) => answer.institution,
      ),
    accounts: (accessToken: string) => call('/accounts/get', { access_token: accessToken }, z.object({ accounts: z.array(AccountSchema) })).then((answer) => answer.accounts),
    syncPage: (accessToken: string, cursor: string | undefined, count: number) =>
      call('/transactions/sync', { access_token: accessToken, count, ...(cursor ? { cursor } : {}) }, SyncPageSchema),
    /** The item's holdings; none when the aggregator answers that the item has none to give (`NO_HOLDINGS`). */
    holdings: (accessToken: string): Promise<PlaidHoldings> =>
      call('/investments/holdings/get', { access_token: accessToken }, HoldingsSchema, (error) => (NO_HOLDINGS.has(error.error_code) ? { holdings: [], securities: [] } : undefined)),
    /**
     * Removes the item at the aggregator (its access token stops working there, and billing stops). An
     * item the aggregator no longer knows (`ITEM_NOT_FOUND`, `INVALID_ACCESS_TOKEN`) is already gone.
     */
    removeItem: (accessToken: string): Promise<'removed' | 'already_gone'> =>
      call('/item/remove', { access_token: accessToken }, z.object({}).transform((): 'removed' | 'already_gone' => 'removed'), (error) =>
        ITEM_GONE.has(error.error_code) ? 'already_gone' : undefined,
      ),
  };
}

export type PlaidApi = ReturnType<typeof createPlaidApi>;

function readPlaidError(text: string): PlaidError | undefined {
  try {
    const parsed = PlaidErrorSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
