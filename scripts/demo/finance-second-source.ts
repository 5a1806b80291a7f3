import { DAY_MS, isoDate, isoInstant } from './random.ts';

/** The second demo finance source's display name: a second provider delivering two of the same accounts. */
export const SECOND_FINANCE_SOURCE = 'Demo finance (second source)';

/** What only the second source delivers on the merged checking account: agents read both (design 8.3). */
export const SECOND_SOURCE_ONLY = { pendingCharge: '-23.40', refund: '18.00' } as const;

/**
 * A second finance connection that delivers two accounts the first one has too (spec 2.1): the Chase
 * checking with the same last 4 (merged without asking; its last 30 days of transactions repeated, each read
 * once, plus a pending charge and a refund only this source has, which agents read too), and the American
 * Express card without a last 4 (an open question in the Console), repeating the card's purchases of 8 to 17
 * days ago: until the operator answers, agents read both copies, marked as possible twins.
 */
export function secondFinanceSource(end: number, firstTransactions: ReadonlyArray<Record<string, unknown>>) {
  const accounts = [
    { source_id: 'agg-chk', institution_name: 'Chase', institution_domain: 'chase.com', name: 'CHASE TOTAL CHECKING', mask: '4821', type: 'depository', subtype: 'checking', currency: 'USD', balance_current: '4812.33', balance_as_of: isoInstant(end) },
    { source_id: 'agg-card', institution_name: 'American Express', institution_domain: 'americanexpress.com', name: 'Gold Card', mask: null, type: 'credit', subtype: 'credit card', currency: 'USD', balance_current: '1264.80', balance_as_of: isoInstant(end) },
  ];
  const since = new Date(end - 30 * 86_400_000).toISOString().slice(0, 10);
  const transactions = firstTransactions
    .filter((tx) => tx.account_id === 'acc-chk' && typeof tx.posted_on === 'string' && tx.posted_on >= since)
    .map((tx) => ({ ...tx, source_id: `agg-${String(tx.source_id)}`, account_id: 'agg-chk' }));
  const [cardFrom, cardTo] = [isoDate(end - 17 * DAY_MS), isoDate(end - 8 * DAY_MS)];
  const cardCopies = firstTransactions
    .filter((tx) => tx.account_id === 'acc-card' && typeof tx.posted_on === 'string' && tx.posted_on >= cardFrom && tx.posted_on <= cardTo)
    .map((tx) => ({ ...tx, source_id: `agg-${String(tx.source_id)}`, account_id: 'agg-card' }));
  const onlyHere = [
    { source_id: 'agg-only-pending', account_id: 'agg-chk', posted_on: null, authorized_on: isoDate(end - DAY_MS), amount: SECOND_SOURCE_ONLY.pendingCharge, currency: 'USD', description: 'CORNER GROCER', merchant_name: 'Corner Grocer', provider_category: 'groceries', category: 'groceries', pending: true },
    { source_id: 'agg-only-refund', account_id: 'agg-chk', posted_on: isoDate(end - 3 * DAY_MS), amount: SECOND_SOURCE_ONLY.refund, currency: 'USD', description: 'AMAZON REFUND', merchant_name: 'Amazon', provider_category: 'shopping', category: 'shopping', pending: false },
  ];
  return { accounts, transactions: [...transactions, ...onlyHere, ...cardCopies], cardCopies };
}
