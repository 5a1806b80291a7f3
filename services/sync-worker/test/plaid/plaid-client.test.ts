import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOriginRebaser } from '@pcg/shared/providers';
import { demoAggregatorItem, startPlaidDouble, type PlaidDouble } from '@pcg/testkit/doubles';
import { SourceAuthError, SourceRateLimitedError, SourceRejectedError } from '../../src/connectors/kit/source-errors.ts';
import { createPlaidApi, SyncMutationError } from '../../src/connectors/plaid/plaid-api.ts';
import { negateDecimal, plainDecimal } from '../../src/connectors/plaid/plaid-mapping.ts';

let aggregator: PlaidDouble;
beforeAll(async () => {
  aggregator = await startPlaidDouble();
});
afterAll(async () => {
  await aggregator?.close();
});

const api = (secret = aggregator.app.secret) =>
  createPlaidApi({ app: { clientId: aggregator.app.clientId, clientSecret: secret, environment: 'production' }, rebaseUrl: createOriginRebaser({ PLAID_BASE_URL: aggregator.url }), timeoutMs: 2_000 });

describe('amounts as decimal text', () => {
  it.each([
    ['54.2', '-54.2'],
    ['54.20', '-54.20'],
    ['-3850', '3850'],
    ['0.1', '-0.1'],
    ['0', '0'],
    ['-0.00', '0.00'],
    ['1e-7', '-0.0000001'],
    ['1.5E3', '-1500'],
    ['123456789012345678.99', '-123456789012345678.99'],
  ])('%s from the aggregator (positive = money out) is stored as %s', (text, stored) => {
    const plain = plainDecimal(text);
    expect(plain).toBeDefined();
    expect(negateDecimal(plain ?? '')).toBe(stored);
  });

  it('refuses text that is not a number', () => {
    expect(plainDecimal('NaN')).toBeUndefined();
    expect(plainDecimal('1,5')).toBeUndefined();
  });
});

describe('the aggregator double and the typed client', () => {
  it('takes the application credentials in the headers or in the body, and refuses wrong ones', async () => {
    const { accessToken } = aggregator.createItem();
    expect((await api().accounts(accessToken)).map((account) => account.account_id)).toContain('acc-chk-4821');
    const inBody = await fetch(`${aggregator.url}/accounts/get`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: aggregator.app.clientId, secret: aggregator.app.secret, access_token: accessToken }),
    });
    expect(inBody.status).toBe(200);
    expect(aggregator.requests.filter((request) => request.path === '/accounts/get').map((request) => request.credentialsIn)).toEqual(['headers', 'body']);
    await expect(api('wrong').accounts(accessToken)).rejects.toBeInstanceOf(SourceRejectedError);
  });

  it('reads every amount as the digits sent, and balances, holdings and consent expiry', async () => {
    const { accessToken } = aggregator.createItem();
    const page = await api().syncPage(accessToken, undefined, 500);
    expect(page.added.find((tx) => tx.transaction_id === 'tx-wf-1')?.amount).toBe('54.2');
    expect(page.has_more).toBe(false);
    const item = await api().item(accessToken);
    expect(Date.parse(item.consent_expiration_time ?? '')).toBeGreaterThan(Date.now());
    const { holdings } = await api().holdings(accessToken);
    expect(holdings.map((holding) => holding.quantity).sort()).toEqual(['96', '967.78']);
  });

  it('names the mutation during paging, a login to repair and a per-item rate limit', async () => {
    const { itemId, accessToken } = aggregator.createItem();
    const first = await api().syncPage(accessToken, undefined, 2);
    expect(first.has_more).toBe(true);
    aggregator.mutateDuringNextPagination(itemId);
    await expect(api().syncPage(accessToken, first.next_cursor, 2)).rejects.toBeInstanceOf(SyncMutationError);

    aggregator.rateLimitNext(itemId);
    await expect(api().accounts(accessToken)).rejects.toBeInstanceOf(SourceRateLimitedError);
    // Another item of the same application is not limited.
    const other = aggregator.createItem();
    await expect(api().accounts(other.accessToken)).resolves.toHaveLength(3);

    aggregator.requireLogin(itemId);
    await expect(api().accounts(accessToken)).rejects.toThrow(SourceAuthError);
    await expect(api().accounts(accessToken)).rejects.toThrow(/ITEM_LOGIN_REQUIRED/);
    expect((await api().item(accessToken)).error?.error_code).toBe('ITEM_LOGIN_REQUIRED');
  });

  // Issue 31 item 14: Plaid's Item errors page tells the person to act at the bank, then link again in update mode.
  it.each(['USER_SETUP_REQUIRED', 'INSUFFICIENT_CREDENTIALS', 'MFA_NOT_SUPPORTED'] as const)('asks the person (needs sign-in) for %s with a plain reason, never a retry', async (code) => {
    const { itemId, accessToken } = aggregator.createItem();
    aggregator.setItemError(itemId, code);
    const refused = await api()
      .accounts(accessToken)
      .then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(SourceAuthError);
    expect((refused as Error).message).toContain(code);
    expect((refused as Error).message).toMatch(/open the aggregator's sign-in again from the Console.*; the data already synced is kept$/);
  });

  it('reads "no holdings" from the answers of an item without Investments, without consent to it, or without an investment account', async () => {
    const seed = demoAggregatorItem();
    const brokerage = seed.accounts.filter((account) => account.type === 'investment');
    for (const variant of [{ products: ['transactions'] }, { consentedProducts: ['transactions'] }, { accounts: seed.accounts.filter((account) => account.type !== 'investment') }]) {
      aggregator.state.nextSeed = { ...seed, ...variant };
      const { accessToken } = aggregator.createItem();
      await expect(api().holdings(accessToken)).resolves.toEqual({ holdings: [], securities: [] });
    }
    expect(brokerage).toHaveLength(1);
    const answered = aggregator.requests.filter((request) => request.path === '/investments/holdings/get').slice(-3);
    expect(answered.map((request) => request.status)).toEqual([400, 400, 400]);
  });

  it('answers an empty cursor while the item\'s first data is not ready', async () => {
    aggregator.state.startNotReady = true;
    const { itemId, accessToken } = aggregator.createItem();
    aggregator.state.startNotReady = false;
    const page = await api().syncPage(accessToken, undefined, 100);
    expect(page).toMatchObject({ added: [], modified: [], removed: [], next_cursor: '', has_more: false, transactions_update_status: 'NOT_READY' });
    aggregator.markReady(itemId);
    expect((await api().syncPage(accessToken, undefined, 100)).added).toHaveLength(5);
  });
});
