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

/** A raw call with the application's keys in the headers, as Plaid's own clients send it. */
async function ask(path: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  // Bytes, so that fetch adds no Content-Type of its own.
  const answer = await fetch(`${aggregator.url}${path}`, {
    method: 'POST',
    headers: { ...headers, 'PLAID-CLIENT-ID': aggregator.app.clientId, 'PLAID-SECRET': aggregator.app.secret, 'Plaid-Version': '2020-09-14' },
    body: new TextEncoder().encode(typeof body === 'string' ? body : JSON.stringify(body)),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

describe('the aggregator double refuses what Plaid refuses, with the error pages’ bodies', () => {
  it.each([
    ['a field the endpoint does not know', 'UNKNOWN_FIELDS', '/accounts/get', { options: { account_ids: [] }, include_everything: true }, 'the following fields are not recognized by this endpoint: include_everything'],
    ['a nested field the endpoint does not know', 'UNKNOWN_FIELDS', '/transactions/sync', { options: { include_original_description: true, newest_first: true } }, 'the following fields are not recognized by this endpoint: options.newest_first'],
    ['a required field left out', 'MISSING_FIELDS', '/item/get', {}, 'the following required fields are missing: access_token'],
    ['a count above 500', 'INVALID_FIELD', '/transactions/sync', { count: 501 }, 'count must be <= 500'],
    ['a count of 0', 'INVALID_FIELD', '/transactions/sync', { count: 0 }, 'count must be >= 1'],
  ])('%s: 400 INVALID_REQUEST %s', async (_case, code, path, extra, message) => {
    const { accessToken } = aggregator.createItem();
    const answer = await ask(path, path === '/item/get' ? extra : { access_token: accessToken, ...extra });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error_type: 'INVALID_REQUEST', error_code: code, error_message: message, display_message: null });
    expect(checkPlaidResponse(path, 400, answer.body)).toEqual([]);
  });

  it('a request without Content-Type is INVALID_HEADERS, one whose type is not JSON INVALID_BODY', async () => {
    const { accessToken } = aggregator.createItem();
    const body = JSON.stringify({ access_token: accessToken });
    expect((await ask('/accounts/get', body, {})).body).toMatchObject({ error_type: 'INVALID_REQUEST', error_code: 'INVALID_HEADERS' });
    expect((await ask('/accounts/get', body, { 'content-type': 'text/plain' })).body).toMatchObject({ error_type: 'INVALID_REQUEST', error_code: 'INVALID_BODY', error_message: 'body could not be parsed as JSON' });
  });

  it('an endpoint that does not exist is 400 NOT_FOUND "not found"', async () => {
    const answer = await ask('/transactions/everything', {});
    expect(answer).toMatchObject({ status: 400, body: { error_type: 'INVALID_REQUEST', error_code: 'NOT_FOUND', error_message: 'not found' } });
  });

  it('an unknown access token is INVALID_ACCESS_TOKEN "could not find matching access token"', async () => {
    const answer = await ask('/accounts/get', { access_token: 'access-production-00000000-0000-0000-0000-000000000000' });
    expect(answer).toMatchObject({ status: 400, body: { error_type: 'INVALID_INPUT', error_code: 'INVALID_ACCESS_TOKEN', error_message: 'could not find matching access token' } });
  });

  it('the 16th /accounts/get of one item within a minute is 429 ACCOUNTS_LIMIT (Production: 15 per Item per minute); another item is not limited', async () => {
    const { accessToken } = aggregator.createItem();
    const statuses: number[] = [];
    for (let i = 0; i < 16; i += 1) statuses.push((await ask('/accounts/get', { access_token: accessToken })).status);
    expect(statuses.slice(0, 15).every((status) => status === 200)).toBe(true);
    const limited = await ask('/accounts/get', { access_token: accessToken });
    expect(limited).toMatchObject({ status: 429, body: { error_type: 'RATE_LIMIT_EXCEEDED', error_code: 'ACCOUNTS_LIMIT', error_message: 'rate limit exceeded for attempts to access this item. please try again later' } });
    expect((await ask('/accounts/get', { access_token: aggregator.createItem().accessToken })).status).toBe(200);
  });

  it('holdings of an item without the Investments product are PRODUCTS_NOT_SUPPORTED, without consent to it ADDITIONAL_CONSENT_REQUIRED', async () => {
    aggregator.state.nextSeed = { ...demoAggregatorItem(), products: ['transactions'] };
    const withoutProduct = await ask('/investments/holdings/get', { access_token: aggregator.createItem().accessToken });
    expect(withoutProduct).toMatchObject({ status: 400, body: { error_type: 'ITEM_ERROR', error_code: 'PRODUCTS_NOT_SUPPORTED' } });
    aggregator.state.nextSeed = { ...demoAggregatorItem(), consentedProducts: ['transactions'] };
    const withoutConsent = await ask('/investments/holdings/get', { access_token: aggregator.createItem().accessToken });
    expect(withoutConsent).toMatchObject({ status: 400, body: { error_type: 'INVALID_INPUT', error_code: 'ADDITIONAL_CONSENT_REQUIRED' } });
  });
});
