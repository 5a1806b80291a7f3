/**
 * The one category language of `finance.transaction.category` (design 8.3, issue 33): every finance source
 * and the demo map into it; the provider's own category is kept in `provider_category`. The database derives
 * `category` from `provider_category` (the function `finance_category`, migration 1795300055000), which is
 * where the mapping lives; this list is what get_schema documents, and a test checks the two agree.
 */
export const FINANCE_CATEGORIES = {
  income: 'pay, interest, refunds counted as income',
  transfer: 'money moved between accounts, card payments, cash withdrawals',
  loan_payment: 'payments on loans and mortgages',
  groceries: 'supermarkets and grocery stores',
  dining: 'restaurants, cafés, bars, fast food and other food and drink',
  shopping: 'general merchandise, online shops, clothing, electronics',
  transport: 'fuel, public transport, taxis and ride-hailing, parking',
  travel: 'flights, hotels, rental cars',
  housing: 'rent and home improvement',
  utilities: 'electricity, gas, water, internet, phone',
  health: 'medical, pharmacy, personal care',
  entertainment: 'streaming, subscriptions, events, games',
  services: 'professional and public services, government, donations',
  fees: 'bank fees and charges',
  other: 'a category the source gave that none of the above covers',
} as const;

export type FinanceCategory = keyof typeof FINANCE_CATEGORIES;

/** The set as get_schema states it: `name (what it covers)`, in order. */
export const categoryListText = () =>
  Object.entries(FINANCE_CATEGORIES)
    .map(([name, covers]) => `${name} (${covers})`)
    .join('; ');

/** A bridge merchant category code (ISO 18245) as the provider category the mapping reads. */
export const mccCategory = (mcc: string | number | undefined | null): string | null => {
  const code = String(mcc ?? '').trim();
  return /^\d{4}$/.test(code) ? `mcc:${code}` : null;
};
