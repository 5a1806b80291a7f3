import { isoInstant } from './random.ts';

/** The second demo finance source's display name: a second provider delivering two of the same accounts. */
export const SECOND_FINANCE_SOURCE = 'Demo finance (second source)';

/**
 * A second finance connection that delivers two accounts the first one has too (spec 2.1): the Chase
 * checking with the same last 4 (merged without asking, its last 30 days of transactions repeated and
 * hidden from agents), and the American Express card without a last 4 (an open question in the Console).
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
  return { accounts, transactions };
}
