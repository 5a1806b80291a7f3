/**
 * Records of the bank aggregator double (reference/providers.md §1.5), in the aggregator's own shapes:
 * amounts are JSON numbers and positive when money LEAVES the account (the aggregator's sign, the
 * opposite of the gateway's).
 */

export type AggregatorAccount = {
  account_id: string;
  persistent_account_id?: string;
  name: string;
  official_name: string | null;
  mask: string | null;
  type: 'depository' | 'credit' | 'loan' | 'investment' | 'other';
  subtype: string | null;
  balances: { available: number | null; current: number | null; limit: number | null; iso_currency_code: string | null; unofficial_currency_code: string | null };
};

export type AggregatorTransaction = {
  transaction_id: string;
  account_id: string;
  amount: number;
  iso_currency_code: string | null;
  unofficial_currency_code: string | null;
  date: string;
  authorized_date: string | null;
  name: string;
  merchant_name: string | null;
  pending: boolean;
  pending_transaction_id: string | null;
  payment_channel: 'online' | 'in store' | 'other';
  personal_finance_category: { primary: string; detailed: string } | null;
};

export type AggregatorSecurity = { security_id: string; name: string | null; ticker_symbol: string | null; type: string | null; close_price: number | null; iso_currency_code: string | null };
export type AggregatorHolding = {
  account_id: string;
  security_id: string;
  institution_price: number;
  institution_price_as_of: string | null;
  institution_value: number;
  cost_basis: number | null;
  quantity: number;
  iso_currency_code: string | null;
  unofficial_currency_code: string | null;
};

export type AggregatorInstitution = { institution_id: string; name: string; url: string | null };

/** What one completed link creates: an institution with its accounts, transactions and holdings. */
export type AggregatorItemSeed = {
  institution: AggregatorInstitution;
  accounts: AggregatorAccount[];
  transactions: AggregatorTransaction[];
  securities: AggregatorSecurity[];
  holdings: AggregatorHolding[];
  /** ISO 8601, or null when the bank reports none (most US banks). */
  consentExpirationTime: string | null;
  /** The item's `products` (and `billed_products`); default transactions, and investments when there are holdings. */
  products?: string[];
  /** The item's `consented_products`; default transactions and investments. */
  consentedProducts?: string[];
};

const isoDay = (daysAgo: number, now = Date.now()) => new Date(now - daysAgo * 86_400_000).toISOString().slice(0, 10);

const usd = (current: number | null, available: number | null, limit: number | null = null) => ({ available, current, limit, iso_currency_code: 'USD', unofficial_currency_code: null });

export function aggregatorTransaction(fields: Partial<AggregatorTransaction> & Pick<AggregatorTransaction, 'transaction_id' | 'account_id' | 'amount' | 'name'>): AggregatorTransaction {
  return {
    iso_currency_code: 'USD',
    unofficial_currency_code: null,
    date: isoDay(1),
    authorized_date: null,
    merchant_name: null,
    pending: false,
    pending_transaction_id: null,
    payment_channel: 'other',
    personal_finance_category: null,
    ...fields,
  };
}

/**
 * The bank the double links by default: a checking account whose purchase at Whole Foods is the same
 * one the bridge double's demo reports (54.20 out, here as the aggregator's positive 54.2), a card, and
 * a brokerage account with two positions. The bank's consent expires in 120 days.
 */
export function demoAggregatorItem(now = Date.now()): AggregatorItemSeed {
  const day = (ago: number) => isoDay(ago, now);
  return {
    institution: { institution_id: 'ins_56', name: 'Chase', url: 'https://www.chase.com' },
    accounts: [
      { account_id: 'acc-chk-4821', name: 'Total Checking', official_name: 'Chase Total Checking ••4821', mask: '4821', type: 'depository', subtype: 'checking', balances: usd(4812.33, 4712.33) },
      { account_id: 'acc-card-1190', name: 'Sapphire Card', official_name: 'Chase Sapphire Preferred', mask: '1190', type: 'credit', subtype: 'credit card', balances: usd(612.4, 9387.6, 10000) },
      { account_id: 'acc-brk-7781', name: 'Brokerage', official_name: null, mask: '7781', type: 'investment', subtype: 'brokerage', balances: usd(23150.5, null) },
    ],
    transactions: [
      aggregatorTransaction({ transaction_id: 'tx-wf-1', account_id: 'acc-chk-4821', amount: 54.2, date: day(3), authorized_date: day(4), name: 'WHOLE FOODS #123', merchant_name: 'Whole Foods', payment_channel: 'in store', personal_finance_category: { primary: 'FOOD_AND_DRINK', detailed: 'FOOD_AND_DRINK_GROCERIES' } }),
      aggregatorTransaction({ transaction_id: 'tx-pay-1', account_id: 'acc-chk-4821', amount: -3850, date: day(2), name: 'ACME CORP PAYROLL', merchant_name: 'Acme Corp', personal_finance_category: { primary: 'INCOME', detailed: 'INCOME_WAGES' } }),
      aggregatorTransaction({ transaction_id: 'tx-cof-1', account_id: 'acc-card-1190', amount: 12.75, date: day(0), name: 'BLUE BOTTLE COFFEE', merchant_name: 'Blue Bottle', pending: true, payment_channel: 'in store' }),
      aggregatorTransaction({ transaction_id: 'tx-ref-1', account_id: 'acc-card-1190', amount: -19.99, date: day(6), name: 'AMAZON REFUND', merchant_name: 'Amazon', payment_channel: 'online' }),
      aggregatorTransaction({ transaction_id: 'tx-fee-1', account_id: 'acc-chk-4821', amount: 0.1, date: day(8), name: 'WIRE FEE ROUNDING' }),
    ],
    securities: [
      { security_id: 'sec-vti', name: 'Vanguard Total Stock Market ETF', ticker_symbol: 'VTI', type: 'etf', close_price: 231.07, iso_currency_code: 'USD' },
      { security_id: 'sec-cash', name: 'U S Dollar', ticker_symbol: 'CUR:USD', type: 'cash', close_price: 1, iso_currency_code: 'USD' },
    ],
    holdings: [
      { account_id: 'acc-brk-7781', security_id: 'sec-vti', institution_price: 231.07, institution_price_as_of: day(1), institution_value: 22182.72, cost_basis: 18000.01, quantity: 96, iso_currency_code: 'USD', unofficial_currency_code: null },
      { account_id: 'acc-brk-7781', security_id: 'sec-cash', institution_price: 1, institution_price_as_of: day(1), institution_value: 967.78, cost_basis: null, quantity: 967.78, iso_currency_code: 'USD', unofficial_currency_code: null },
    ],
    consentExpirationTime: new Date(now + 120 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
}
