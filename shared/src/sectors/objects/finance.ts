import { commonFields, field, type ObjectDef } from '../catalogue-types.ts';

const MERGED_NOTE =
  'An account two connections both deliver appears once, from the connection created first; the other copy and its rows are left out, so sums count each transaction once.';
const MONEY_NOTE = 'Money is an exact decimal string with an ISO 4217 `currency`; do not add amounts across currencies.';

export const financeAccount: ObjectDef = {
  name: 'finance.account',
  sector: 'finance',
  table: 'finance_accounts',
  description: 'A bank, card, loan or investment account with its latest balances.',
  fields: [
    ...commonFields(),
    field('institution_name', 'string', 'Name of the bank or institution.'),
    field('institution_domain', 'string', "The institution's web domain, e.g. chase.com."),
    field('name', 'string', 'Account name as the institution shows it.'),
    field('mask', 'string', 'Last 4 digits of the account number.'),
    field('type', 'string', 'depository, credit, loan or investment.', { categorical: true }),
    field('subtype', 'string', 'checking, savings, credit card, mortgage, brokerage, …', { categorical: true }),
    field('currency', 'string', 'ISO 4217 currency code of the balances.', { categorical: true }),
    field('balance_current', 'decimal', 'Current balance; for credit accounts, the amount owed.'),
    field('balance_available', 'decimal', 'Balance available to spend, when the institution reports one.'),
    field('balance_limit', 'decimal', 'Credit limit, for credit accounts.'),
    field('balance_as_of', 'timestamp', 'When the institution last reported the balances (UTC).'),
    field('consent_expires_at', 'timestamp', "When the bank's consent for this link expires (UTC); null when not reported."),
  ],
  notes: [
    MONEY_NOTE,
    'For credit and loan accounts balance_current is what is owed, a positive number.',
    'Balances are as of balance_as_of, not live.',
    MERGED_NOTE,
  ],
  fieldDocs: {
    balance_current: 'Credit/loan: amount owed (positive). Depository: money in the account.',
    balance_available: 'May be null; some institutions report only the current balance.',
    consent_expires_at: 'After this instant the bank stops sharing data until the link is renewed.',
    mask: 'Last 4 digits only; never the full account number.',
  },
  defaultOrder: [{ field: 'institution_name', direction: 'asc' }, { field: 'name', direction: 'asc' }],
  hidesMerged: 'account',
};

export const financeTransaction: ObjectDef = {
  name: 'finance.transaction',
  sector: 'finance',
  table: 'finance_transactions',
  description: 'A posted or pending transaction on an account.',
  fields: [
    ...commonFields(),
    field('account_id', 'string', 'Gateway id of the finance.account.'),
    field('posted_on', 'date', 'Date the transaction posted (local date, no time).'),
    field('authorized_on', 'date', 'Date the transaction was authorized, when known.'),
    field('amount', 'decimal', 'Signed amount: negative when money leaves the account, positive when it comes in.', { nullable: false }),
    field('currency', 'string', 'ISO 4217 currency code.', { categorical: true }),
    field('description', 'string', 'Description as the institution shows it.'),
    field('merchant_name', 'string', 'Cleaned merchant name, when known.'),
    field('category', 'string', 'Spending category, when known.', { categorical: true }),
    field('pending', 'boolean', 'True until the transaction posts.', { nullable: false }),
  ],
  notes: [
    'amount is negative for money leaving the account (purchases, fees) and positive for money coming in, whatever the provider itself uses: the bank aggregator (Plaid) sends a positive amount for money leaving the account and the bank-link bridge (SimpleFIN) a positive amount for money entering it; both are stored in this one convention.',
    MONEY_NOTE,
    'posted_on and authorized_on are local calendar dates, not instants.',
    'Pending transactions may change amount or disappear when they post.',
    MERGED_NOTE,
  ],
  fieldDocs: {
    amount: "Negative = money out, positive = money in, for every source (Plaid's own positive = money out is flipped; SimpleFIN's positive = money in is kept). Sum spending with where amount lt 0.",
    posted_on: 'Local date (YYYY-MM-DD); compare with dates, not timestamps.',
    pending: 'Pending rows can be replaced by a posted row with another id.',
  },
  defaultOrder: [{ field: 'posted_on', direction: 'desc' }],
  hidesMerged: 'account_rows',
};

export const financeHolding: ObjectDef = {
  name: 'finance.holding',
  sector: 'finance',
  table: 'finance_holdings',
  description: 'A position held in an investment account.',
  fields: [
    ...commonFields(),
    field('account_id', 'string', 'Gateway id of the finance.account.'),
    field('security_name', 'string', 'Name of the security.'),
    field('ticker', 'string', 'Ticker symbol, when it has one.'),
    field('quantity', 'decimal', 'Units held.'),
    field('price', 'decimal', 'Price per unit as of as_of.'),
    field('value', 'decimal', 'quantity × price as reported by the institution.'),
    field('cost_basis', 'decimal', 'Total cost basis, when reported.'),
    field('currency', 'string', 'ISO 4217 currency code.', { categorical: true }),
    field('as_of', 'timestamp', 'When the price was observed (UTC).'),
  ],
  notes: [MONEY_NOTE, 'Prices are as of as_of and can be a day old.', MERGED_NOTE],
  fieldDocs: {
    value: 'Already multiplied out; do not multiply by quantity again.',
    cost_basis: 'Total for the position, not per unit.',
  },
  defaultOrder: [{ field: 'value', direction: 'desc' }],
  hidesMerged: 'account_rows',
};
