import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkPlaidRequest, plaidDescribes, plaidMissingFields, plaidUnknownFields, warmPlaidRequestSchemas } from './openapi/plaid-openapi.ts';
import { demoAggregatorItem, type AggregatorAccount, type AggregatorItemSeed, type AggregatorTransaction } from './plaid-fixtures.ts';

/**
 * A local bank aggregator (Plaid-style, reference/providers.md §1) for tests and the demo. Every call is
 * a POST with a JSON body; the application's `client_id`/`secret` ride in the body or in the
 * `PLAID-CLIENT-ID`/`PLAID-SECRET` headers. `/link/token/create` with `hosted_link` answers a hosted
 * link address; opening it (or `POST /test/link/complete`) plays the person linking their bank, then
 * sends the browser to the completion redirect; `/link/token/get` reports the session's public token,
 * `/item/public_token/exchange` trades it for the item's access token. `/transactions/sync` pages
 * with opaque cursors (`added`/`modified`/`removed`, `has_more`), answers an empty cursor while the
 * item's first data is not ready, and `TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION` when the data
 * changed between two pages. Items can be made to need their login repaired (`ITEM_LOGIN_REQUIRED`,
 * cleared by a link in update mode) and to be rate limited per item (429 `RATE_LIMIT_EXCEEDED`).
 * `/item/remove` removes an item: its access token is then refused by every endpoint (`ITEM_NOT_FOUND`),
 * and a second removal, or one with a token the double never issued, answers `ITEM_NOT_FOUND` too.
 *
 * Sources, cited at each behaviour: [PL-OAS] is Plaid's OpenAPI file kept beside this double
 * (openapi/2020-09-14.trimmed.yml, see its README); [PL-ERR-*] are Plaid's error pages
 * (https://plaid.com/docs/errors/<page>/), whose sample bodies give each error's type, code, HTTP status and
 * message; "providers.md §1.x" is the project's offline reference. A behaviour they do not settle is marked
 * `guess:` with why. Every request body of an operation the OpenAPI file describes is checked against its
 * request schema before it is served: unknown fields, missing required fields and malformed ones are refused
 * as Plaid's Invalid Request errors page says.
 */

export type AggregatorRequest = {
  path: string;
  at: number;
  accessToken: string | null;
  credentialsIn: 'body' | 'headers' | 'none';
  /** `/transactions/sync`: the cursor asked with (null for none or empty); `/link/token/create`: whether in update mode. */
  cursor: string | null;
  updateMode: boolean;
  /** HTTP status of the answer. */
  status: number;
  /** The request body as sent (null when it was not a JSON object), and the `Plaid-Version` header. */
  body: Record<string, unknown> | null;
  plaidVersion: string | null;
  /** The JSON body the double answered with. */
  answer: unknown;
};

type TrackedTransaction = { tx: AggregatorTransaction; createdSeq: number; modifiedSeq: number };
type RemovedTransaction = { account_id: string; createdSeq: number; removedSeq: number };
type ItemError = { error_type: string; error_code: string; error_message: string; display_message: string | null };

type Item = {
  itemId: string;
  accessToken: string;
  seed: AggregatorItemSeed;
  accounts: AggregatorAccount[];
  transactions: Map<string, TrackedTransaction>;
  removed: Map<string, RemovedTransaction>;
  /** Bumped by every change to the transactions; a cursor remembers the value it was made at. */
  seq: number;
  ready: boolean;
  error: ItemError | null;
  /** Requests per endpoint within the current minute. */
  calls: Map<string, number[]>;
  forced429: Array<{ retryAfter?: string }>;
  /** Statuses the next data calls answer with (an outage of the aggregator). */
  forcedFailures: number[];
  mutateOnNextPage: boolean;
};

type CursorState = { itemId: string; from: number; snapshot: number; offset: number };
type LinkSession = {
  linkToken: string;
  completionRedirect: string | null;
  /** Update mode: the item whose login the link repairs. */
  updateItemId: string | null;
  products: string[];
  finishedAt: string | null;
  publicToken: string | null;
  /** What `/link/token/get` reports of the link's creation ([PL-OAS] LinkTokenGetResponse, LinkTokenGetMetadataResponse). */
  createdAt: string;
  expiration: string;
  metadata: { initial_products: string[]; webhook: string | null; country_codes: string[]; language: string | null; redirect_uri: string | null; client_name: string | null };
};

/**
 * Answers in the shapes [PL-OAS] requires: its Transaction, Security and InvestmentAccountBalance list fields
 * as required that are null for most banks (location, payment_meta, datetimes, identifiers, classifications).
 * The fixtures give what a test cares about; the rest is filled with the nulls Plaid sends when it has nothing.
 * guess: `is_cash_equivalent` true exactly for the `cash` type (the file describes it as "cash or cash equivalent").
 */
const NO_LOCATION = { address: null, city: null, region: null, postal_code: null, country: null, lat: null, lon: null, store_number: null };
const NO_PAYMENT_META = { reference_number: null, ppd_id: null, payee: null, by_order_of: null, payer: null, payment_method: null, payment_processor: null, reason: null };
const transactionView = (tx: AggregatorTransaction) => ({ account_owner: null, location: NO_LOCATION, payment_meta: NO_PAYMENT_META, datetime: null, authorized_datetime: null, transaction_code: null, ...tx });
const securityView = (security: AggregatorItemSeed['securities'][number]) => ({
  cusip: null,
  sedol: null,
  isin: null,
  institution_security_id: null,
  institution_id: null,
  proxy_security_id: null,
  is_cash_equivalent: security.type === 'cash',
  close_price_as_of: null,
  unofficial_currency_code: null,
  market_identifier_code: null,
  sector: null,
  industry: null,
  cfi_code: null,
  option_contract: null,
  fixed_income: null,
  ...security,
});
const investmentAccountView = (account: AggregatorAccount) => ({ ...account, balances: { margin_loan_amount: null, ...account.balances } });

export type PlaidDoubleOptions = {
  clientId?: string;
  secret?: string;
  /** What the next completed link creates; default `demoAggregatorItem()`. */
  seed?: () => AggregatorItemSeed;
  /** Requests per item per endpoint per minute before 429, for every endpoint; default Plaid's own per-endpoint limits (`ITEM_LIMITS`). */
  perItemPerMinute?: number;
  /** Whose per-item limits apply: Production's (default, what a deployment meets) or the Sandbox's. */
  environment?: 'production' | 'sandbox';
  /** New items start with their transactions not ready (empty cursor) until `markReady`. */
  startNotReady?: boolean;
  port?: number;
};

const LOGIN_REQUIRED: ItemError = {
  error_type: 'ITEM_ERROR',
  error_code: 'ITEM_LOGIN_REQUIRED',
  error_message: "the login details of this item have changed (credentials, MFA, or required user action) and a user login is required to update this information. use Link's update mode to restore the item to a good state",
  display_message: null,
};

/**
 * Item errors the person mends at the bank and then through Link's update mode, with the bodies Plaid's
 * Item errors page shows (https://plaid.com/docs/errors/item/, "API error response" of each; HTTP 400).
 */
const PERSON_ERRORS = {
  USER_SETUP_REQUIRED: {
    error_type: 'ITEM_ERROR',
    error_code: 'USER_SETUP_REQUIRED',
    error_message: "the account has not been fully set up. prompt the user to visit the issuing institution's site and finish the setup process",
    display_message: "The given account is not fully setup. Please visit your financial institution's website to setup your account.",
  },
  INSUFFICIENT_CREDENTIALS: {
    error_type: 'ITEM_ERROR',
    error_code: 'INSUFFICIENT_CREDENTIALS',
    error_message: 'insufficient authorization was provided to complete the request',
    display_message: 'INSUFFICIENT_CREDENTIALS',
  },
  MFA_NOT_SUPPORTED: {
    error_type: 'ITEM_ERROR',
    error_code: 'MFA_NOT_SUPPORTED',
    error_message: 'this account requires a MFA type that we do not currently support for the institution',
    display_message: 'The multi-factor security features enabled on this account are not currently supported for this financial institution. We apologize for the inconvenience.',
  },
} satisfies Record<string, ItemError>;
export type PersonItemError = keyof typeof PERSON_ERRORS;

/** [PL-ERR-rate-limit-exceeded]: each endpoint's own code, HTTP 429, the same message; providers.md §1.7. */
const RATE_CODES: Record<string, string> = {
  '/accounts/get': 'ACCOUNTS_LIMIT',
  '/accounts/balance/get': 'BALANCE_LIMIT',
  '/item/get': 'ITEM_GET_LIMIT',
  '/transactions/sync': 'TRANSACTIONS_SYNC_LIMIT',
  '/investments/holdings/get': 'INVESTMENT_HOLDINGS_GET_LIMIT',
};

/**
 * Requests per Item per minute, Production and Sandbox, as each code's entry on [PL-ERR-rate-limit-exceeded]
 * states them (ACCOUNTS_LIMIT, BALANCE_LIMIT, ITEM_GET_LIMIT, INVESTMENT_HOLDINGS_GET_LIMIT,
 * TRANSACTIONS_SYNC_LIMIT); `/item/remove` from providers.md §1.7 (Production; guess: the same in the Sandbox,
 * and its code the generic RATE_LIMIT, as no page names one). Endpoints without a per-Item limit are not limited.
 */
const ITEM_LIMITS: Record<string, { production: number; sandbox: number }> = {
  '/accounts/get': { production: 15, sandbox: 100 },
  '/accounts/balance/get': { production: 5, sandbox: 25 },
  '/item/get': { production: 15, sandbox: 40 },
  '/investments/holdings/get': { production: 15, sandbox: 100 },
  '/transactions/sync': { production: 50, sandbox: 50 },
  '/item/remove': { production: 30, sandbox: 30 },
};

class PlaidFailure extends Error {
  readonly status: number;
  readonly body: ItemError & Record<string, unknown>;
  readonly retryAfter: string | undefined;
  constructor(status: number, body: ItemError & Record<string, unknown>, retryAfter?: string) {
    super(body.error_code);
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

const fail = (status: number, error_type: string, error_code: string, error_message: string) => new PlaidFailure(status, { error_type, error_code, error_message, display_message: null });
/** [PL-ERR-item] ITEM_NOT_FOUND: HTTP 400, the page's message. */
const itemNotFound = () => fail(400, 'ITEM_ERROR', 'ITEM_NOT_FOUND', 'The Item you requested cannot be found. This Item does not exist, has been previously removed via /item/remove, or has had access removed by the user.');
/** [PL-ERR-invalid-request]: every Invalid Request error is HTTP 400 with `error_type` INVALID_REQUEST. */
const invalidRequest = (error_code: string, error_message: string) => fail(400, 'INVALID_REQUEST', error_code, error_message);

export async function startPlaidDouble(options: PlaidDoubleOptions = {}) {
  const clientId = options.clientId ?? `client-${randomBytes(6).toString('hex')}`;
  const secret = options.secret ?? randomBytes(15).toString('hex');
  const seedOf = options.seed ?? (() => demoAggregatorItem());
  const environment = options.environment ?? 'production';
  const perMinuteOf = (path: string) => options.perItemPerMinute ?? ITEM_LIMITS[path]?.[environment] ?? Infinity;
  const items = new Map<string, Item>();
  const byAccessToken = new Map<string, Item>();
  /** Access tokens of removed items, and when each was removed. */
  const removedTokens = new Map<string, { itemId: string; at: number }>();
  const cursors = new Map<string, CursorState>();
  const links = new Map<string, LinkSession>();
  const publicTokens = new Map<string, string>();
  const requests: AggregatorRequest[] = [];
  /** `nextSeed`: what the next item links instead of the default seed (once). */
  const state: { startNotReady: boolean; nextSeed: AggregatorItemSeed | null } = { startNotReady: options.startNotReady ?? false, nextSeed: null };

  /** The logged request each answer belongs to, so the answer is recorded beside it. */
  const answering = new WeakMap<ServerResponse, AggregatorRequest>();

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const logged = answering.get(res);
    if (logged) logged.answer = body;
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  /**
   * [PL-ERR-invalid-request] INVALID_HEADERS: "The request was missing a header, typically the Content-Type
   * header"; INVALID_BODY ("body could not be parsed as JSON"): the body is malformed JSON or its content-type is
   * not application/json. guess: the wording of INVALID_HEADERS ("specific to the given / missing header" on the page).
   */
  async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const type = req.headers['content-type'];
    if (type === undefined) throw invalidRequest('INVALID_HEADERS', 'the following required headers are missing: Content-Type');
    if (!/^application\/json\s*(;|$)/i.test(type)) throw invalidRequest('INVALID_BODY', 'body could not be parsed as JSON');
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      // fall through
    }
    throw invalidRequest('INVALID_BODY', 'body could not be parsed as JSON');
  }

  /**
   * The body against the operation's request schema [PL-OAS]: fields it does not name are UNKNOWN_FIELDS
   * ("the following fields are not recognized by this endpoint: {fields}"), required ones absent are
   * MISSING_FIELDS ("the following required fields are missing: {fields}"), any other violation (a type, a
   * bound such as `count` 1–500, an enum) is INVALID_FIELD [PL-ERR-invalid-request]. guess: the order of the
   * three checks, and that nested objects are checked like the top level (the page says "the request body
   * included one or more extraneous fields" without saying how deep); INVALID_FIELD's wording is "specific to
   * the given field" on the page, here the field and the schema's complaint.
   */
  function checkBody(path: string, body: Record<string, unknown>): void {
    if (!plaidDescribes(path)) return;
    const unknown = plaidUnknownFields(path, body) ?? [];
    if (unknown.length > 0) throw invalidRequest('UNKNOWN_FIELDS', `the following fields are not recognized by this endpoint: ${unknown.join(', ')}`);
    const problems = checkPlaidRequest(path, body);
    const missing = plaidMissingFields(problems);
    if (missing.length > 0) throw invalidRequest('MISSING_FIELDS', `the following required fields are missing: ${missing.join(', ')}`);
    const first = problems[0];
    if (first) throw invalidRequest('INVALID_FIELD', `${first.path === '/' ? 'body' : first.path.slice(1).replaceAll('/', '.')} ${first.message.replace(/ \{.*$/, '')}`);
  }

  /**
   * The application's credentials, from the body or the `PLAID-CLIENT-ID`/`PLAID-SECRET` headers (providers.md
   * §1.1; [PL-OAS] `security` and each request's optional `client_id`/`secret`). Wrong ones are INVALID_API_KEYS,
   * HTTP 400, "invalid client_id or secret provided" [PL-ERR-invalid-input]. guess: none at all answers
   * MISSING_FIELDS naming both (the page lists no error of its own for absent keys).
   */
  function authenticate(req: IncomingMessage, body: Record<string, unknown>, logged: AggregatorRequest): void {
    const fromBody = typeof body.client_id === 'string' || typeof body.secret === 'string';
    logged.credentialsIn = fromBody ? 'body' : req.headers['plaid-client-id'] !== undefined || req.headers['plaid-secret'] !== undefined ? 'headers' : 'none';
    const id = fromBody ? body.client_id : req.headers['plaid-client-id'];
    const key = fromBody ? body.secret : req.headers['plaid-secret'];
    if (id === undefined || key === undefined) throw invalidRequest('MISSING_FIELDS', 'the following required fields are missing: client_id, secret');
    if (id !== clientId || key !== secret) throw fail(400, 'INVALID_INPUT', 'INVALID_API_KEYS', 'invalid client_id or secret provided');
  }

  function itemOf(body: Record<string, unknown>): Item {
    const token = body.access_token;
    if (typeof token !== 'string') throw fail(400, 'INVALID_REQUEST', 'MISSING_FIELDS', 'the following required fields are missing: access_token');
    const item = byAccessToken.get(token);
    if (!item && removedTokens.has(token)) throw itemNotFound();
    // [PL-ERR-invalid-input] INVALID_ACCESS_TOKEN: HTTP 400, "could not find matching access token".
    if (!item) throw fail(400, 'INVALID_INPUT', 'INVALID_ACCESS_TOKEN', 'could not find matching access token');
    return item;
  }

  /**
   * Per-item limits (providers.md §1.7, [PL-ERR-rate-limit-exceeded]): a forced 429 first, then the per-minute
   * count; an outage the test asks for is [PL-ERR-api] INTERNAL_SERVER_ERROR. guess: Plaid's 429 carries no
   * `Retry-After` (none of its pages shows one); a test may add one.
   */
  function limit(item: Item, path: string): void {
    const outage = item.forcedFailures.shift();
    if (outage) throw new PlaidFailure(outage, { error_type: 'API_ERROR', error_code: 'INTERNAL_SERVER_ERROR', error_message: 'an unexpected error occurred', display_message: null });
    const code = RATE_CODES[path] ?? 'RATE_LIMIT';
    const forced = item.forced429.shift();
    const message = 'rate limit exceeded for attempts to access this item. please try again later';
    if (forced) throw new PlaidFailure(429, { error_type: 'RATE_LIMIT_EXCEEDED', error_code: code, error_message: message, display_message: null }, forced.retryAfter);
    const now = Date.now();
    const recent = (item.calls.get(path) ?? []).filter((at) => now - at < 60_000);
    recent.push(now);
    item.calls.set(path, recent);
    if (recent.length > perMinuteOf(path)) throw new PlaidFailure(429, { error_type: 'RATE_LIMIT_EXCEEDED', error_code: code, error_message: message, display_message: null });
  }

  /**
   * The products the item was initialised with (`products`, or an `optional_products` the bank supports: [PL-OAS]
   * LinkTokenCreateRequest) and those the person consented to (`consented_products`, [PL-OAS] Item).
   */
  const productsOf = (item: Item) => item.seed.products ?? (item.seed.holdings.length > 0 ? ['investments', 'transactions'] : ['transactions']);
  const consentedOf = (item: Item) => item.seed.consentedProducts ?? ['transactions', 'investments'];

  /**
   * [PL-OAS] ItemWithConsentFields; `error` is non-null only here, data endpoints answer the error itself
   * (providers.md §1.5). guess: `available_products` (what could still be added) is balance alone.
   */
  const itemView = (item: Item) => ({
    item_id: item.itemId,
    institution_id: item.seed.institution.institution_id,
    institution_name: item.seed.institution.name,
    webhook: null,
    error: item.error ? { ...item.error, request_id: randomUUID() } : null,
    available_products: ['balance'],
    billed_products: productsOf(item),
    products: productsOf(item),
    consented_products: consentedOf(item),
    consented_data_scopes: ['account_balance_info', 'transactions'],
    consent_expiration_time: item.seed.consentExpirationTime,
    update_type: 'background',
  });

  function createItem(): Item {
    const seed = structuredClone(state.nextSeed ?? seedOf());
    state.nextSeed = null;
    const item: Item = {
      itemId: randomBytes(12).toString('base64url'),
      // providers.md §1.1: `access-<environment>-<identifier>`; it never expires, only /item/remove revokes it. The
      // double's tokens always say `sandbox` (tests look for these prefixes in logs), whichever limits apply.
      accessToken: `access-sandbox-${randomUUID()}`,
      seed,
      accounts: seed.accounts,
      transactions: new Map(seed.transactions.map((tx) => [tx.transaction_id, { tx, createdSeq: 1, modifiedSeq: 1 }])),
      removed: new Map(),
      seq: 1,
      ready: !state.startNotReady,
      error: null,
      calls: new Map(),
      forced429: [],
      forcedFailures: [],
      mutateOnNextPage: false,
    };
    items.set(item.itemId, item);
    byAccessToken.set(item.accessToken, item);
    return item;
  }

  function newCursor(cursor: CursorState): string {
    const token = randomBytes(24).toString('base64');
    cursors.set(token, cursor);
    return token;
  }

  /**
   * `/transactions/sync` (providers.md §1.4, [PL-OAS] TransactionsSyncRequest/Response): `count` default 100 (1–500
   * is enforced by the schema check); opaque cursors; added/modified/removed in ascending change order; `removed`
   * rows carry only the two ids; `accounts` lists only accounts with transactions (no investment account); an item
   * whose first data is not ready answers empty lists, an empty `next_cursor` and NOT_READY (Plaid says it "can":
   * a test turns it on with `startNotReady`/`state.startNotReady`, the contract suite's connectors meet it in
   * test/sources/plaid.test.ts); the cursor reached at `has_more: false` stays valid.
   * guess: an unknown cursor is INVALID_FIELD (the file does not say what an invalid cursor answers).
   */
  function sync(item: Item, body: Record<string, unknown>) {
    const count = typeof body.count === 'number' ? body.count : 100;
    const given = typeof body.cursor === 'string' && body.cursor !== '' ? body.cursor : undefined;
    const start = given === undefined ? { itemId: item.itemId, from: 0, snapshot: item.seq, offset: 0 } : cursors.get(given);
    if (!start || start.itemId !== item.itemId) throw fail(400, 'INVALID_INPUT', 'INVALID_FIELD', 'cursor is not valid for this item');
    const accounts = item.accounts.filter((account) => account.type !== 'investment');
    if (!item.ready) {
      return { added: [], modified: [], removed: [], next_cursor: given ?? '', has_more: false, accounts: [], transactions_update_status: 'NOT_READY' };
    }
    // providers.md §1.4 [PL-TXERR]: data that changes between two pages of one loop fails the later page.
    if (start.offset > 0 && item.mutateOnNextPage) {
      item.mutateOnNextPage = false;
      const first = item.accounts[0]?.account_id ?? 'acc';
      double.addTransaction(item.itemId, { transaction_id: `tx-mid-${item.seq}`, account_id: first, amount: 7.5, name: 'LATE ARRIVAL' });
    }
    const cursor = start.offset > 0 || given === undefined ? start : { ...start, snapshot: item.seq };
    if (cursor.offset > 0 && item.seq !== cursor.snapshot) {
      // [PL-ERR-transactions] (providers.md §1.4): HTTP 400 and the page's message.
      throw fail(400, 'TRANSACTIONS_ERROR', 'TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION', 'Underlying transaction data changed since last page was fetched. Please restart pagination from last update.');
    }
    type Change = { seq: number; kind: 'added' | 'modified' | 'removed'; tx?: AggregatorTransaction; removed?: { transaction_id: string; account_id: string } };
    const changes: Change[] = [];
    for (const tracked of item.transactions.values()) {
      if (tracked.modifiedSeq > cursor.from) changes.push({ seq: tracked.modifiedSeq, kind: tracked.createdSeq > cursor.from ? 'added' : 'modified', tx: tracked.tx });
    }
    for (const [transaction_id, gone] of item.removed) {
      if (gone.removedSeq > cursor.from && gone.createdSeq <= cursor.from) changes.push({ seq: gone.removedSeq, kind: 'removed', removed: { transaction_id, account_id: gone.account_id } });
    }
    changes.sort((a, b) => a.seq - b.seq || (a.tx?.transaction_id ?? a.removed?.transaction_id ?? '').localeCompare(b.tx?.transaction_id ?? b.removed?.transaction_id ?? ''));
    const page = changes.slice(cursor.offset, cursor.offset + count);
    const hasMore = cursor.offset + count < changes.length;
    const next = hasMore ? { ...cursor, offset: cursor.offset + count } : { itemId: item.itemId, from: cursor.snapshot, snapshot: cursor.snapshot, offset: 0 };
    return {
      added: page.flatMap((change) => (change.kind === 'added' && change.tx ? [transactionView(change.tx)] : [])),
      modified: page.flatMap((change) => (change.kind === 'modified' && change.tx ? [transactionView(change.tx)] : [])),
      removed: page.filter((change) => change.kind === 'removed').map((change) => change.removed),
      next_cursor: newCursor(next),
      has_more: hasMore,
      accounts,
      transactions_update_status: 'HISTORICAL_UPDATE_COMPLETE',
    };
  }

  function completeLink(linkToken: string): LinkSession {
    const session = links.get(linkToken);
    if (!session) throw fail(400, 'INVALID_INPUT', 'INVALID_LINK_TOKEN', 'invalid link_token provided');
    if (!session.finishedAt) {
      session.finishedAt = new Date().toISOString();
      if (session.updateItemId) {
        const item = items.get(session.updateItemId);
        if (item) item.error = null;
      } else {
        const item = createItem();
        const publicToken = `public-sandbox-${randomUUID()}`;
        publicTokens.set(publicToken, item.itemId);
        session.publicToken = publicToken;
      }
    }
    return session;
  }

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const hosted = /^\/hosted\/([^/]+)$/.exec(url.pathname);
    if (hosted?.[1] && req.method === 'GET') {
      // The person links their bank at the hosted page and is sent to the completion redirect ([PL-OAS]
      // LinkTokenCreateHostedLink `completion_redirect_uri`). guess: the page itself (Plaid's is a full Link UI).
      const session = completeLink(decodeURIComponent(hosted[1]));
      requests.push({ path: url.pathname, at: Date.now(), accessToken: null, credentialsIn: 'none', cursor: null, updateMode: false, status: 200, body: null, plaidVersion: null, answer: null });
      if (session.completionRedirect) {
        res.writeHead(302, { location: session.completionRedirect });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>Linked</title><p>Your bank is linked. You may close this page.</p>');
      return;
    }
    // Every endpoint is a POST with a JSON body (providers.md §1.1); [PL-ERR-invalid-request] NOT_FOUND is HTTP 400 "not found".
    // guess: another method on a known path answers the same NOT_FOUND.
    if (req.method !== 'POST') throw invalidRequest('NOT_FOUND', 'not found');
    const body = await readBody(req);
    // The double's own route (not Plaid's): a test completes a link without a browser.
    if (url.pathname === '/test/link/complete') {
      const session = completeLink(String(body.link_token ?? ''));
      return send(res, 200, { public_token: session.publicToken, redirect: session.completionRedirect });
    }
    const logged: AggregatorRequest = {
      path: url.pathname,
      at: Date.now(),
      accessToken: typeof body.access_token === 'string' ? body.access_token : null,
      credentialsIn: 'none',
      cursor: typeof body.cursor === 'string' && body.cursor !== '' ? body.cursor : null,
      updateMode: url.pathname === '/link/token/create' && typeof body.access_token === 'string',
      status: 200,
      body: structuredClone(body),
      plaidVersion: typeof req.headers['plaid-version'] === 'string' ? req.headers['plaid-version'] : null,
      answer: null,
    };
    requests.push(logged);
    answering.set(res, logged);
    res.on('finish', () => {
      logged.status = res.statusCode;
    });
    authenticate(req, body, logged);
    checkBody(url.pathname, body);
    const request_id = randomUUID();
    switch (url.pathname) {
      case '/link/token/create': {
        const user = body.user as { client_user_id?: unknown } | undefined;
        const updating = typeof body.access_token === 'string' ? itemOf(body) : undefined;
        const products = Array.isArray(body.products) ? body.products.map(String) : [];
        // [PL-OAS] LinkTokenCreateRequest: `user` is "Required if `user_id` isn't included"; `products`: "at least one
        // `product` is required" outside update mode (both in prose, so not caught by the schema check).
        const missing: string[] = [];
        if (typeof user?.client_user_id !== 'string' && typeof body.user_id !== 'string') missing.push('user');
        if (!updating && products.length === 0) missing.push('products');
        if (missing.length > 0) throw invalidRequest('MISSING_FIELDS', `the following required fields are missing: ${missing.join(', ')}`);
        const hostedLink = body.hosted_link as { completion_redirect_uri?: unknown } | undefined;
        const linkToken = `link-sandbox-${randomUUID()}`;
        const redirect = typeof hostedLink?.completion_redirect_uri === 'string' ? hostedLink.completion_redirect_uri : null;
        // providers.md §1.2 [PL-OAS]: a link token lives 4 hours, 30 minutes in update mode.
        const expiration = new Date(Date.now() + (updating ? 30 : 240) * 60_000).toISOString();
        const metadata = {
          initial_products: products,
          webhook: typeof body.webhook === 'string' ? body.webhook : null,
          country_codes: Array.isArray(body.country_codes) ? body.country_codes.map(String) : [],
          language: typeof body.language === 'string' ? body.language : null,
          redirect_uri: typeof body.redirect_uri === 'string' ? body.redirect_uri : null,
          client_name: typeof body.client_name === 'string' ? body.client_name : null,
        };
        links.set(linkToken, { linkToken, completionRedirect: redirect, updateItemId: updating?.itemId ?? null, products, finishedAt: null, publicToken: null, createdAt: new Date().toISOString(), expiration, metadata });
        return send(res, 200, { link_token: linkToken, expiration, request_id, ...(hostedLink ? { hosted_link_url: `${double.url}/hosted/${encodeURIComponent(linkToken)}` } : {}) });
      }
      case '/link/token/get': {
        const session = links.get(String(body.link_token ?? ''));
        if (!session) throw fail(400, 'INVALID_INPUT', 'INVALID_LINK_TOKEN', 'invalid link_token provided');
        const item = session.publicToken ? items.get(publicTokens.get(session.publicToken) ?? '') : undefined;
        const sessions = session.finishedAt
          ? [
              {
                link_session_id: `session-${session.linkToken.slice(-12)}`,
                started_at: session.finishedAt,
                finished_at: session.finishedAt,
                // [PL-OAS] LinkSessionResults: every product's result list is present, empty when the link added none.
                results: {
                  item_add_results: session.publicToken && item
                    ? [{ public_token: session.publicToken, accounts: item.accounts.map((a) => ({ id: a.account_id, name: a.name, mask: a.mask, type: a.type, subtype: a.subtype })), institution: { name: item.seed.institution.name, institution_id: item.seed.institution.institution_id } }]
                    : [],
                  cra_item_add_results: [],
                  cra_update_results: [],
                  bank_income_results: [],
                  payroll_income_results: [],
                  document_income_results: null,
                },
              },
            ]
          : [];
        return send(res, 200, { link_token: session.linkToken, created_at: session.createdAt, expiration: session.expiration, metadata: session.metadata, link_sessions: sessions, request_id });
      }
      case '/item/public_token/exchange': {
        const itemId = publicTokens.get(String(body.public_token ?? ''));
        // [PL-ERR-invalid-input] INVALID_PUBLIC_TOKEN: HTTP 400, "could not find matching public token"; a public token is used once (providers.md §1.2).
        if (!itemId) throw fail(400, 'INVALID_INPUT', 'INVALID_PUBLIC_TOKEN', 'could not find matching public token');
        publicTokens.delete(String(body.public_token));
        const item = items.get(itemId);
        return send(res, 200, { access_token: item?.accessToken, item_id: itemId, request_id });
      }
      case '/item/get': {
        const item = itemOf(body);
        limit(item, url.pathname);
        return send(res, 200, { item: itemView(item), status: { transactions: { last_successful_update: new Date().toISOString(), last_failed_update: null } }, request_id });
      }
      // providers.md §1.3 [PL-OAS] ItemRemoveRequest; [PL-ERR-item] ITEM_NOT_FOUND: an item "previously removed via
      // /item/remove". guess: a token never issued is ITEM_NOT_FOUND here too (other endpoints: INVALID_ACCESS_TOKEN).
      case '/item/remove': {
        const token = body.access_token;
        if (typeof token !== 'string') throw fail(400, 'INVALID_REQUEST', 'MISSING_FIELDS', 'the following required fields are missing: access_token');
        const item = byAccessToken.get(token);
        if (!item) throw itemNotFound();
        limit(item, url.pathname);
        byAccessToken.delete(token);
        items.delete(item.itemId);
        removedTokens.set(token, { itemId: item.itemId, at: Date.now() });
        return send(res, 200, { request_id });
      }
      // [PL-OAS] InstitutionsGetByIdRequest/Institution; [PL-ERR-invalid-input] INVALID_INSTITUTION "invalid institution_id provided".
      // guess: the institution's `products` and `country_codes` (the double knows only what its items use).
      case '/institutions/get_by_id': {
        const institution = [...items.values()].map((item) => item.seed.institution).find((candidate) => candidate.institution_id === body.institution_id);
        if (!institution) throw fail(400, 'INVALID_INPUT', 'INVALID_INSTITUTION', 'invalid institution_id provided');
        return send(res, 200, { institution: { ...institution, products: ['transactions'], country_codes: ['US'], oauth: false, routing_numbers: [] }, request_id });
      }
      // providers.md §1.3: both answer accounts and item; an item error is the answer itself ([PL-ERR-item], HTTP 400).
      // guess: balance/get's live refresh is not played (the balances are those of /accounts/get).
      case '/accounts/get':
      case '/accounts/balance/get': {
        const item = itemOf(body);
        if (item.error) throw new PlaidFailure(400, item.error);
        limit(item, url.pathname);
        return send(res, 200, { accounts: item.accounts, item: itemView(item), request_id });
      }
      case '/transactions/sync': {
        const item = itemOf(body);
        if (item.error) throw new PlaidFailure(400, item.error);
        limit(item, url.pathname);
        return send(res, 200, { ...sync(item, body), request_id });
      }
      case '/investments/holdings/get': {
        const item = itemOf(body);
        if (item.error) throw new PlaidFailure(400, item.error);
        limit(item, url.pathname);
        // Plaid's Item errors page (https://plaid.com/docs/errors/item/): a product the item was not initialised
        // with is PRODUCTS_NOT_SUPPORTED (its sample body has an empty message); the Invalid Input errors page
        // (https://plaid.com/docs/errors/invalid-input/): a product the person did not consent to is
        // ADDITIONAL_CONSENT_REQUIRED; an item with no investment account is NO_INVESTMENT_ACCOUNTS.
        if (!productsOf(item).includes('investments')) throw fail(400, 'ITEM_ERROR', 'PRODUCTS_NOT_SUPPORTED', '');
        if (!consentedOf(item).includes('investments')) throw fail(400, 'INVALID_INPUT', 'ADDITIONAL_CONSENT_REQUIRED', 'client does not have user consent to access the PRODUCT_INVESTMENTS product');
        const investment = item.accounts.filter((account) => account.type === 'investment');
        if (investment.length === 0) {
          throw fail(400, 'ITEM_ERROR', 'NO_INVESTMENT_ACCOUNTS', 'There are no valid investment account(s) associated with this Item. See https://plaid.com/docs/api/#item-errors for more information.');
        }
        return send(res, 200, { accounts: investment.map(investmentAccountView), holdings: item.seed.holdings, securities: item.seed.securities.map(securityView), item: itemView(item), request_id });
      }
      default:
        throw invalidRequest('NOT_FOUND', 'not found');
    }
  }

  warmPlaidRequestSchemas();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://double');
    route(req, res, url).catch((error: unknown) => {
      if (error instanceof PlaidFailure) return send(res, error.status, { ...error.body, request_id: randomUUID() }, error.retryAfter ? { 'retry-after': error.retryAfter } : {});
      send(res, 500, { error_type: 'API_ERROR', error_code: 'INTERNAL_SERVER_ERROR', error_message: String(error), display_message: null });
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  function itemById(itemId: string): Item {
    const item = items.get(itemId);
    if (!item) throw new Error(`the aggregator double has no item ${itemId}`);
    return item;
  }
  function change(item: Item): number {
    item.seq += 1;
    return item.seq;
  }

  const double = {
    url: `http://127.0.0.1:${port}`,
    /** The application's credentials, as the operator would copy them from the aggregator's dashboard. */
    app: { clientId, secret },
    requests,
    state,
    /** The items still linked (a removed item is no longer listed). */
    items: () => [...items.values()].map((item) => ({ itemId: item.itemId, accessToken: item.accessToken })),
    /** The items removed through `/item/remove`, in order, with the access token each was removed with. */
    removedItems: () => [...removedTokens].map(([accessToken, removed]) => ({ itemId: removed.itemId, accessToken, at: removed.at })),
    /** Completes a hosted link without a browser: the public token and where the browser would be sent. */
    async completeLink(linkToken: string): Promise<{ publicToken: string | null; redirect: string | null }> {
      const session = completeLink(linkToken);
      return { publicToken: session.publicToken, redirect: session.completionRedirect };
    },
    /** An item made directly (what a completed link and exchange leave), for tests that need no link flow. */
    createItem(): { itemId: string; accessToken: string } {
      const item = createItem();
      return { itemId: item.itemId, accessToken: item.accessToken };
    },
    markReady(itemId: string): void {
      itemById(itemId).ready = true;
    },
    addTransaction(itemId: string, fields: Partial<AggregatorTransaction> & Pick<AggregatorTransaction, 'transaction_id' | 'account_id' | 'amount' | 'name'>): void {
      const item = itemById(itemId);
      const seq = change(item);
      const tx: AggregatorTransaction = { iso_currency_code: 'USD', unofficial_currency_code: null, date: new Date().toISOString().slice(0, 10), authorized_date: null, merchant_name: null, pending: false, pending_transaction_id: null, payment_channel: 'other', personal_finance_category: null, ...fields };
      item.transactions.set(tx.transaction_id, { tx, createdSeq: seq, modifiedSeq: seq });
    },
    modifyTransaction(itemId: string, transactionId: string, fields: Partial<AggregatorTransaction>): void {
      const item = itemById(itemId);
      const tracked = item.transactions.get(transactionId);
      if (!tracked) throw new Error(`no transaction ${transactionId}`);
      tracked.tx = { ...tracked.tx, ...fields };
      tracked.modifiedSeq = change(item);
    },
    removeTransaction(itemId: string, transactionId: string): void {
      const item = itemById(itemId);
      const tracked = item.transactions.get(transactionId);
      if (!tracked) throw new Error(`no transaction ${transactionId}`);
      item.transactions.delete(transactionId);
      item.removed.set(transactionId, { account_id: tracked.tx.account_id, createdSeq: tracked.createdSeq, removedSeq: change(item) });
    },
    setBalance(itemId: string, accountId: string, current: number): void {
      const account = itemById(itemId).accounts.find((candidate) => candidate.account_id === accountId);
      if (account) account.balances.current = current;
    },
    setConsentExpiration(itemId: string, at: string | null): void {
      itemById(itemId).seed.consentExpirationTime = at;
    },
    /** The bank wants the person to log in again: data calls answer `ITEM_LOGIN_REQUIRED` until a link in update mode. */
    requireLogin(itemId: string): void {
      itemById(itemId).error = { ...LOGIN_REQUIRED };
    },
    /** The bank wants the person to act (at the bank, then through a link in update mode): data calls answer this item error until then. */
    setItemError(itemId: string, code: PersonItemError): void {
      itemById(itemId).error = { ...PERSON_ERRORS[code] };
    },
    /** The next data calls of this item answer 429 `RATE_LIMIT_EXCEEDED`; the aggregator itself sends no `Retry-After`. */
    rateLimitNext(itemId: string, options: { times?: number; retryAfter?: string } = {}): void {
      for (let i = 0; i < (options.times ?? 1); i += 1) itemById(itemId).forced429.push(options.retryAfter ? { retryAfter: options.retryAfter } : {});
    },
    /** The next data calls of this item answer with these statuses (`API_ERROR`), in order. */
    failNext(itemId: string, status: number, options: { times?: number } = {}): void {
      for (let i = 0; i < (options.times ?? 1); i += 1) itemById(itemId).forcedFailures.push(status);
    },
    /** The next request for a second page finds the data changed (a new transaction arrives) and answers the mutation error. */
    mutateDuringNextPagination(itemId: string): void {
      itemById(itemId).mutateOnNextPage = true;
    },
    syncRequests(): AggregatorRequest[] {
      return requests.filter((request) => request.path === '/transactions/sync');
    },
    close(): Promise<void> {
      return new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
  return double;
}

export type PlaidDouble = Awaited<ReturnType<typeof startPlaidDouble>>;
