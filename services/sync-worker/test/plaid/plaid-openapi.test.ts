import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOriginRebaser } from '@pcg/shared/providers';
import { aggregatorTransaction, checkPlaidRequest, checkPlaidResponse, demoAggregatorItem, plaidSecurityHeaders, plaidUnknownFields, startPlaidDouble, type AggregatorRequest, type PlaidDouble } from '@pcg/testkit/doubles';
import { createPlaidApi } from '../../src/connectors/plaid/plaid-api.ts';

/**
 * Schema checks against Plaid's own OpenAPI file (plaid/plaid-openapi `2020-09-14.yml`, kept trimmed in the
 * testkit with its origin): every request the connector's client sends, and every answer the double gives,
 * must match the operation's schemas there (design §8.2, issue 32 "Schema checks").
 */
let aggregator: PlaidDouble;
beforeAll(async () => {
  aggregator = await startPlaidDouble();
});
afterAll(async () => {
  await aggregator?.close();
});

const api = (secret = aggregator.app.secret) =>
  createPlaidApi({ app: { clientId: aggregator.app.clientId, clientSecret: secret, environment: 'production' }, rebaseUrl: createOriginRebaser({ PLAID_BASE_URL: aggregator.url }), timeoutMs: 2_000 });

/** Every described operation the connector's client has: a link, update mode, reads, paging, errors it settles, removal. */
async function playEveryCall(): Promise<void> {
  const client = api();
  const created = await client.createLinkToken({ userId: 'person-1', completionRedirect: 'http://127.0.0.1:9/done' });
  await client.linkResults(created.link_token);
  await aggregator.completeLink(created.link_token);
  const [publicToken] = (await client.linkResults(created.link_token)).publicTokens;
  const { access_token: accessToken, item_id: itemId } = await client.exchange(publicToken ?? '');
  const item = await client.item(accessToken);
  await client.institution(item.institution_id ?? '');
  await client.accounts(accessToken);
  let page = await client.syncPage(accessToken, undefined, 2);
  while (page.has_more) page = await client.syncPage(accessToken, page.next_cursor, 2);
  aggregator.modifyTransaction(itemId, 'tx-cof-1', { pending: false });
  aggregator.removeTransaction(itemId, 'tx-fee-1');
  await client.syncPage(accessToken, page.next_cursor, 100);
  await client.holdings(accessToken);
  await client.createLinkToken({ userId: 'person-1', completionRedirect: 'http://127.0.0.1:9/done', accessToken });
  // An item without the Investments product: the client settles PRODUCTS_NOT_SUPPORTED as no holdings.
  aggregator.state.nextSeed = { ...demoAggregatorItem(), products: ['transactions'] };
  const plain = aggregator.createItem();
  await client.holdings(plain.accessToken);
  await client.removeItem(plain.accessToken);
  await client.removeItem(plain.accessToken);
}

/** Error answers the double gives to a client that asks as the connector does. */
async function playErrors(): Promise<void> {
  const { itemId, accessToken } = aggregator.createItem();
  const first = await api().syncPage(accessToken, undefined, 2);
  aggregator.mutateDuringNextPagination(itemId);
  await api().syncPage(accessToken, first.next_cursor, 2).catch(() => undefined);
  aggregator.rateLimitNext(itemId);
  await api().accounts(accessToken).catch(() => undefined);
  aggregator.failNext(itemId, 500);
  await api().accounts(accessToken).catch(() => undefined);
  aggregator.requireLogin(itemId);
  await api().accounts(accessToken).catch(() => undefined);
  await api().item(accessToken);
  await api('wrong-secret').accounts(accessToken).catch(() => undefined);
  aggregator.state.nextSeed = { ...demoAggregatorItem(), consentedProducts: ['transactions'] };
  await api().holdings(aggregator.createItem().accessToken);
  aggregator.state.nextSeed = { ...demoAggregatorItem(), accounts: demoAggregatorItem().accounts.filter((account) => account.type !== 'investment'), holdings: [], products: ['transactions', 'investments'] };
  await api().holdings(aggregator.createItem().accessToken);
}

const described = (request: AggregatorRequest) => request.body !== null && !request.path.startsWith('/test/') && !request.path.startsWith('/hosted/');

describe("Plaid's OpenAPI file and the bank aggregator", () => {
  let played: AggregatorRequest[];
  beforeAll(async () => {
    const from = aggregator.requests.length;
    await playEveryCall();
    await playErrors();
    played = aggregator.requests.slice(from).filter(described);
  });

  it('the connector sends every operation it uses, each request matching its request schema and naming no field the schema lacks', () => {
    expect(new Set(played.map((request) => request.path))).toEqual(
      new Set(['/link/token/create', '/link/token/get', '/item/public_token/exchange', '/item/get', '/institutions/get_by_id', '/accounts/get', '/transactions/sync', '/investments/holdings/get', '/item/remove']),
    );
    const problems = played.flatMap((request) => checkPlaidRequest(request.path, request.body).map((problem) => ({ operation: request.path, ...problem })));
    const unknown = played.flatMap((request) => (plaidUnknownFields(request.path, request.body ?? {}) ?? []).map((field) => `${request.path} ${field}`));
    expect(problems).toEqual([]);
    expect(unknown).toEqual([]);
  });

  it("the connector sends the application's keys and the API version in the headers the file's security requirement names", () => {
    expect(plaidSecurityHeaders()).toEqual(['PLAID-CLIENT-ID', 'PLAID-SECRET', 'Plaid-Version']);
    const sent = new Set(played.map((request) => JSON.stringify({ credentialsIn: request.credentialsIn, version: request.plaidVersion })));
    expect([...sent]).toEqual([JSON.stringify({ credentialsIn: 'headers', version: '2020-09-14' })]);
  });

  it("every answer of the double, 200 or error, matches the operation's response schema", () => {
    const statuses = new Set(played.map((request) => request.status));
    expect([...statuses].sort()).toEqual([200, 400, 429, 500]);
    const problems = played.flatMap((request) => checkPlaidResponse(request.path, request.status, request.answer).map((problem) => ({ operation: request.path, status: request.status, ...problem })));
    expect(problems).toEqual([]);
  });

  it('an answer that breaks the file is caught: a transaction without its id, an amount as text, an unknown error type', () => {
    const { transaction_id: _id, ...withoutId } = aggregatorTransaction({ transaction_id: 't', account_id: 'a', amount: 1, name: 'x' });
    const page = { added: [withoutId], modified: [], removed: [], next_cursor: 'c', has_more: false, accounts: [], transactions_update_status: 'HISTORICAL_UPDATE_COMPLETE', request_id: 'r' };
    expect(checkPlaidResponse('/transactions/sync', 200, page).map((problem) => problem.path)).toContain('/added/0');
    const textAmount = { ...page, added: [{ ...aggregatorTransaction({ transaction_id: 't', account_id: 'a', amount: 1, name: 'x' }), amount: '1.00' }] };
    expect(checkPlaidResponse('/transactions/sync', 200, textAmount).map((problem) => problem.path)).toContain('/added/0/amount');
    expect(checkPlaidResponse('/accounts/get', 400, { error_type: 'NOT_A_TYPE', error_code: 'X', error_message: '', display_message: null, request_id: 'r' }).map((problem) => problem.path)).toContain('/error_type');
  });
});
