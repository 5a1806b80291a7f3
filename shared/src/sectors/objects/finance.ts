import { commonFields, field, type ObjectDef } from '../catalogue-types.ts';
import { ACCOUNT_KIND_RULE } from '../../finance/account-types.ts';
import { categoryListText, FINANCE_CATEGORIES } from '../../finance/categories.ts';

const ACCOUNT_MERGED_NOTE =
  'An account two connections both deliver, found or answered to be the same, appears once, from the connection created first; its holdings are that connection\'s.';
const TRANSACTION_MERGED_NOTE =
  'Transactions of an account two connections both deliver are matched one by one (same account, amount to the cent, dates at most three days apart, same description once lower-cased with digits and punctuation removed and whitespace collapsed; a pending row matches its posted self): each real transaction appears once, from the connection created first when both have it, and a transaction only one copy has is always here (its account_id may name the other copy of the account).';
const TWINS_NOTE =
  'While the operator has not yet said whether two accounts are the same (an open question in the Console), nothing is merged or hidden: both copies appear and each row that may be the same as a row of the other copy names it in possible_twin_id. A result with both rows of such a pair has a top-level `notes` entry saying so; when a group of an aggregate holds both, every group gets, beside each count and sum, `<metric>_without_possible_twins` (for example sum_amount_without_possible_twins, count_without_possible_twins), the same total with the later connection\'s copy of each pair in that group left out. Use that total unless you know the two are different.';
const TWIN_FIELD = (what: string) =>
  field('possible_twin_id', 'string', `Gateway id of the ${what} of another connection that may be this same ${what}: the two accounts await the operator's answer, so both are served. Null when there is none.`);
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
    field('type', 'string', 'depository, credit, loan or investment; inferred from the name for sources that name none (see notes); null when unknown.', { categorical: true }),
    field('subtype', 'string', 'checking, savings, credit card, mortgage, brokerage, …; inferred like type; null when unknown.', { categorical: true }),
    field('currency', 'string', 'ISO 4217 currency code of the balances.', { categorical: true }),
    field('balance_current', 'decimal', 'Current balance; for credit accounts, the amount owed.'),
    field('balance_available', 'decimal', 'Balance available to spend, when the institution reports one.'),
    field('balance_limit', 'decimal', 'Credit limit, for credit accounts.'),
    field('balance_as_of', 'timestamp', 'When the institution last reported the balances (UTC).'),
    field('consent_expires_at', 'timestamp', "When the bank's consent for this link expires (UTC); null when not reported."),
    TWIN_FIELD('account'),
  ],
  notes: [
    MONEY_NOTE,
    'For credit and loan accounts balance_current is what is owed, a positive number.',
    'Balances are as of balance_as_of, not live.',
    'Net worth: aggregate sum of balance_current grouped by type (output sum_balance_current, and sum_balance_current_without_possible_twins when a group holds both copies of an undecided pair): depository plus investment, minus credit and loan.',
    ACCOUNT_KIND_RULE,
    ACCOUNT_MERGED_NOTE,
    TWINS_NOTE,
  ],
  fieldDocs: {
    balance_current: 'Credit/loan: amount owed (positive). Depository: money in the account.',
    balance_available: 'May be null; some institutions report only the current balance.',
    consent_expires_at: 'After this instant the bank stops sharing data until the link is renewed.',
    mask: 'Last 4 digits only; never the full account number.',
    possible_twin_id: 'Set on both accounts of an undecided pair: do not count both; see the notes.',
  },
  defaultOrder: [{ field: 'institution_name', direction: 'asc' }, { field: 'name', direction: 'asc' }],
  hidesMerged: 'account',
  possibleTwins: true,
  internalColumns: ['possible_twin_is_later'],
};

export const financeTransaction: ObjectDef = {
  name: 'finance.transaction',
  sector: 'finance',
  table: 'finance_transactions',
  description: 'A posted or pending transaction on an account.',
  fields: [
    ...commonFields(),
    field('account_id', 'string', 'Gateway id of the finance.account.'),
    field('posted_on', 'date', 'Date the transaction posted (local date, no time); null while pending.'),
    field('authorized_on', 'date', 'Date the transaction was authorized (for a pending one: the day it happened), when known.'),
    field('amount', 'decimal', 'Signed amount: negative when money leaves the account, positive when it comes in.', { nullable: false }),
    field('currency', 'string', 'ISO 4217 currency code.', { categorical: true }),
    field('description', 'string', 'Description as the institution shows it.'),
    field('merchant_name', 'string', 'Cleaned merchant name, when known.'),
    field('pending', 'boolean', 'True until the transaction posts.', { nullable: false }),
    field('provider_category', 'string', "The source's own category as it sent it (the bank aggregator's personal_finance_category, the bridge's merchant category code as mcc:<code>), null when none.", { categorical: true }),
    field('category', 'string', `One category set for every source (changed: it was each source's own word): ${Object.keys(FINANCE_CATEGORIES).join(', ')}. Null when the source gives none.`, { categorical: true, generated: true }),
    field('date', 'date', 'When the transaction happened for every purpose: posted_on, else authorized_on (a pending transaction has no posted_on yet). Relative dates and the default order use it.', { generated: true }),
    TWIN_FIELD('transaction'),
  ],
  notes: [
    'amount is negative for money leaving the account (purchases, fees) and positive for money coming in, whatever the provider itself uses: the bank aggregator (Plaid) sends a positive amount for money leaving the account and the bank-link bridge (SimpleFIN) a positive amount for money entering it; both are stored in this one convention.',
    MONEY_NOTE,
    'date, posted_on and authorized_on are local calendar dates, not instants. Filter and order by date (posted_on is null while a transaction is pending, so filters on it miss pending spending).',
    'Pending transactions may change amount or disappear when they post.',
    `category changed meaning: it was the source's own word (FOOD_AND_DRINK, groceries, …), it is now one set for every source: ${categoryListText()}. The source's word is in provider_category.`,
    TRANSACTION_MERGED_NOTE,
    TWINS_NOTE,
  ],
  fieldDocs: {
    date: 'Use this for "this month", "last 7 days": posting date, else the authorized or pending date. pending says whether it has posted.',
    category: `One of: ${categoryListText()}. Null when the source gives no category.`,
    provider_category: 'Kept as the source sent it; differs between sources. Filter on category instead.',
    possible_twin_id: 'Set on both rows of a transaction two connections may both report (their accounts await the operator\'s answer); see the notes.',
    amount: "Negative = money out, positive = money in, for every source (Plaid's own positive = money out is flipped; SimpleFIN's positive = money in is kept). Sum spending with where amount lt 0.",
    posted_on: 'Local date (YYYY-MM-DD); compare with dates, not timestamps.',
    pending: 'Pending rows can be replaced by a posted row with another id.',
  },
  defaultOrder: [{ field: 'date', direction: 'desc' }],
  hidesMerged: 'transactions',
  possibleTwins: true,
  internalColumns: ['merged_into', 'possible_twin_is_later'],
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
  notes: [MONEY_NOTE, 'Prices are as of as_of and can be a day old.', ACCOUNT_MERGED_NOTE],
  fieldDocs: {
    value: 'Already multiplied out; do not multiply by quantity again.',
    cost_basis: 'Total for the position, not per unit.',
  },
  defaultOrder: [{ field: 'value', direction: 'desc' }],
  hidesMerged: 'account_rows',
};
