import { describe, expect, it } from 'vitest';
import { AccountSchema as PlaidAccountSchema, TransactionSchema as PlaidTransactionSchema } from '../../src/connectors/plaid/plaid-api.ts';
import * as plaid from '../../src/connectors/plaid/plaid-mapping.ts';
import { AccountSetSchema } from '../../src/connectors/simplefin/simplefin-mapping.ts';
import * as bridge from '../../src/connectors/simplefin/simplefin-mapping.ts';

// Issue 33: what each finance connector hands the cache for a date, the one category language and account
// types. The database derives `category` from `provider_category` and `date` from posted_on/authorized_on.
const BALANCE_DATE = Date.parse('2026-11-18T12:00:00Z') / 1000;
const bridgeAccount = (name: string, balance: string, transactions: unknown[] = []) =>
  AccountSetSchema.parse({ errors: [], accounts: [{ org: { domain: 'bank.example', 'sfin-url': 'https://bridge.example/simplefin' }, id: 'A', name, currency: 'USD', balance, 'balance-date': BALANCE_DATE, transactions }] }).accounts[0] as bridge.BridgeAccount;
const institution = { name: 'Bank', domain: 'bank.example' };

describe('the bank-link bridge mapping', () => {
  it('gives a pending transaction its transacted_at day, else the day of the balance it came with, and a posted one its posting day', () => {
    const account = bridgeAccount('Checking', '10.00', [
      { id: 'p1', posted: 0, pending: true, transacted_at: Date.parse('2026-11-16T09:00:00Z') / 1000, amount: '-5.00', description: 'KIOSK' },
      { id: 'p2', posted: 0, pending: true, amount: '-6.00', description: 'KIOSK' },
      { id: 'x1', posted: Date.parse('2026-11-10T09:00:00Z') / 1000, amount: '-7.00', description: 'KIOSK' },
    ]);
    const records = account.transactions.map((tx) => bridge.transactionRecord(account, 'k/A', 'acc', tx));
    expect(records.map((record) => [record?.posted_on, record?.authorized_on, record?.pending])).toEqual([
      [null, '2026-11-16', true],
      [null, '2026-11-18', true],
      ['2026-11-10', null, false],
    ]);
  });

  it('keeps a merchant category code as mcc:<code> for the category map, and none when there is none', () => {
    const account = bridgeAccount('Checking', '10.00', [
      { id: 'a', posted: BALANCE_DATE, amount: '-5.00', description: 'GROCER', mcc: '5411' },
      { id: 'b', posted: BALANCE_DATE, amount: '-5.00', description: 'GROCER', mcc: 5812 },
      { id: 'c', posted: BALANCE_DATE, amount: '-5.00', description: 'GROCER' },
    ]);
    expect(account.transactions.map((tx) => bridge.transactionRecord(account, 'k/A', 'acc', tx)?.provider_category)).toEqual(['mcc:5411', 'mcc:5812', null]);
  });

  it('infers a card from its name and stores its debt as the amount owed; a checking account keeps its balance; an unknown name has no type', () => {
    expect(bridge.accountRecord(bridgeAccount('Sapphire Card', '-640.25'), 'k/A', institution)).toMatchObject({ type: 'credit', subtype: 'credit card', balance_current: '640.25', balance_available: null });
    expect(bridge.accountRecord(bridgeAccount('TOTAL CHECKING', '2500.00'), 'k/A', institution)).toMatchObject({ type: 'depository', subtype: 'checking', balance_current: '2500.00', balance_available: '2500.00' });
    expect(bridge.accountRecord(bridgeAccount('Everyday', '12.00'), 'k/A', institution)).toMatchObject({ type: null, subtype: null, balance_current: '12.00' });
  });
});

describe('the bank aggregator mapping', () => {
  const tx = (fields: Record<string, unknown>) =>
    PlaidTransactionSchema.parse({ transaction_id: 't', account_id: 'a', amount: '12.00', iso_currency_code: 'USD', date: '2026-11-17', name: 'X', pending: false, ...fields });

  it('keeps the detailed personal_finance_category, else the primary one, as the provider category', () => {
    expect(plaid.transactionRecord(tx({ personal_finance_category: { primary: 'FOOD_AND_DRINK', detailed: 'FOOD_AND_DRINK_GROCERIES' } }), 'acc')?.provider_category).toBe('FOOD_AND_DRINK_GROCERIES');
    expect(plaid.transactionRecord(tx({ personal_finance_category: { primary: 'FOOD_AND_DRINK' } }), 'acc')?.provider_category).toBe('FOOD_AND_DRINK');
    expect(plaid.transactionRecord(tx({}), 'acc')?.provider_category).toBeNull();
  });

  it('gives a pending transaction the day it happened as its authorized date', () => {
    expect(plaid.transactionRecord(tx({ pending: true }), 'acc')).toMatchObject({ posted_on: null, authorized_on: '2026-11-17', pending: true });
  });

  it('keeps the type the aggregator names', () => {
    const account = PlaidAccountSchema.parse({ account_id: 'a', name: 'Gold', mask: '1007', type: 'credit', subtype: 'credit card', balances: { current: '640.00' } });
    expect(plaid.accountRecord(account, { institutionName: null, institutionDomain: null, consentExpiresAt: null, syncedAt: '2026-11-18T00:00:00Z' })).toMatchObject({ type: 'credit', subtype: 'credit card', balance_current: '640.00' });
  });
});
