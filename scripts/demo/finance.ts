import { createRandom, dayStart, isoDate, isoInstant, DAY_MS } from './random.ts';

const MERCHANTS = [
  ['Whole Foods', 'groceries', 35, 140], ['Trader Joe\'s', 'groceries', 20, 90], ['Shell', 'transport', 30, 70],
  ['Uber', 'transport', 9, 45], ['Blue Bottle Coffee', 'dining', 4, 12], ['Chipotle', 'dining', 10, 25],
  ['Amazon', 'shopping', 12, 180], ['Netflix', 'subscriptions', 15.49, 15.49], ['Spotify', 'subscriptions', 11.99, 11.99],
  ['CVS Pharmacy', 'health', 6, 60], ['Con Edison', 'utilities', 60, 140], ['Delta Air Lines', 'travel', 180, 650],
] as const;

/**
 * The demo's own category words are its provider category; the catalogue maps them into its one set
 * (design 8.3): each the same word, except `subscriptions`, which is `entertainment`. `category` is that set's
 * value, for tests to compute expected answers with; the upsert path leaves it out (the database derives it).
 */
const IN_CATEGORY_SET: Record<string, string> = { subscriptions: 'entertainment' };

/** Three accounts at two institutions and a year of transactions, signed negative when money leaves. */
export function financeData(end: number) {
  const random = createRandom(101);
  const accounts = [
    { source_id: 'acc-chk', institution_name: 'Chase', institution_domain: 'chase.com', name: 'Total Checking ••4821', mask: '4821', type: 'depository', subtype: 'checking', currency: 'USD', balance_current: '4812.33', balance_available: '4712.33', balance_as_of: isoInstant(end), consent_expires_at: isoInstant(end + 75 * DAY_MS) },
    { source_id: 'acc-sav', institution_name: 'Chase', institution_domain: 'chase.com', name: 'Premier Savings ••9034', mask: '9034', type: 'depository', subtype: 'savings', currency: 'USD', balance_current: '18250.00', balance_available: '18250.00', balance_as_of: isoInstant(end), consent_expires_at: isoInstant(end + 75 * DAY_MS) },
    { source_id: 'acc-card', institution_name: 'American Express', institution_domain: 'americanexpress.com', name: 'Gold Card ••1007', mask: '1007', type: 'credit', subtype: 'credit card', currency: 'USD', balance_current: '1264.80', balance_limit: '15000.00', balance_as_of: isoInstant(end) },
  ];
  const transactions: Array<Record<string, unknown>> = [];
  for (let day = 364; day >= 0; day -= 1) {
    const date = dayStart(end, day);
    const perDay = random.int(1, 5);
    for (let n = 0; n < perDay; n += 1) {
      const [merchant, category, low, high] = random.pick(MERCHANTS);
      const amount = low === high ? low : low + random.next() * (high - low);
      const onCard = random.chance(0.6);
      transactions.push({
        source_id: `tx-${day}-${n}`,
        account_id: onCard ? 'acc-card' : 'acc-chk',
        posted_on: day < 2 && random.chance(0.5) ? null : isoDate(date),
        authorized_on: isoDate(date - (random.chance(0.3) ? DAY_MS : 0)),
        amount: (-amount).toFixed(2),
        currency: 'USD',
        description: `${merchant.toUpperCase()} #${random.int(100, 999)}`,
        merchant_name: merchant,
        provider_category: category,
        category: IN_CATEGORY_SET[category] ?? category,
        pending: day < 2,
      });
    }
    if (new Date(date).getUTCDate() === 1 || new Date(date).getUTCDate() === 15) {
      transactions.push({ source_id: `pay-${day}`, account_id: 'acc-chk', posted_on: isoDate(date), amount: '3850.00', currency: 'USD', description: 'ACME CORP PAYROLL', merchant_name: 'Acme Corp', provider_category: 'income', category: 'income', pending: false });
    }
  }
  const holdings = [
    { source_id: 'h-vti', account_id: 'acc-sav', security_name: 'Vanguard Total Stock Market ETF', ticker: 'VTI', quantity: '42.5', price: '287.14', value: '12203.45', cost_basis: '9800.00', currency: 'USD', as_of: isoInstant(end) },
  ];
  return { accounts, transactions, holdings };
}
