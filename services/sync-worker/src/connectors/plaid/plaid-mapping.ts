import type { PlaidAccount, PlaidHolding, PlaidTransaction } from './plaid-api.ts';

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * A JSON number's source text as a plain decimal string: an exponent is expanded by moving the point
 * in the digits, never through a float. Undefined when the text is not a number.
 */
export function plainDecimal(text: string): string | undefined {
  const match = NUMBER.exec(text.trim());
  if (!match) return undefined;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match;
  const digits = `${whole}${fraction}`;
  const point = whole.length + Number(exponent);
  let plain: string;
  if (point <= 0) plain = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) plain = `${digits}${'0'.repeat(point - digits.length)}`;
  else plain = `${digits.slice(0, point)}.${digits.slice(point)}`;
  plain = plain.replace(/^0+(?=\d)/, '');
  return /^0(\.0*)?$/.test(plain) ? plain : `${sign}${plain}`;
}

/** The same amount with the other sign, on the decimal text (zero stays unsigned). */
export function negateDecimal(plain: string): string {
  if (plain.startsWith('-')) return plain.slice(1);
  return /^0(\.0*)?$/.test(plain) ? plain : `-${plain}`;
}

const decimal = (text: string | null | undefined): string | null => (text == null ? null : (plainDecimal(text) ?? null));
/** ISO 4217 codes only; an unofficial currency (a crypto code) is stored as a null currency. */
const currencyOf = (code: string | null | undefined): string | null => (code && /^[A-Z]{3}$/.test(code) ? code : null);

/** The institution's web domain from its address (`https://www.chase.com` → `chase.com`). */
export function domainOf(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    return new URL(url).hostname.toLowerCase().replace(/^www\./, '') || null;
  } catch {
    return null;
  }
}

export type ItemContext = { institutionName: string | null; institutionDomain: string | null; consentExpiresAt: string | null; syncedAt: string };

export function accountRecord(account: PlaidAccount, item: ItemContext) {
  return {
    source_id: account.account_id,
    institution_name: item.institutionName,
    institution_domain: item.institutionDomain,
    name: account.name,
    mask: account.mask ?? null,
    type: account.type,
    subtype: account.subtype ?? null,
    currency: currencyOf(account.balances.iso_currency_code),
    balance_current: decimal(account.balances.current),
    balance_available: decimal(account.balances.available),
    balance_limit: decimal(account.balances.limit),
    balance_as_of: item.syncedAt,
    consent_expires_at: item.consentExpiresAt,
  };
}

/**
 * An aggregator transaction. Its positive amount is money LEAVING the account (reference §1.5), the
 * opposite of the gateway's convention (negative = money leaves): the sign is flipped on the decimal
 * text. A pending row has no posting date yet; its `date` is when it happened.
 */
export function transactionRecord(tx: PlaidTransaction, accountGatewayId: string | undefined) {
  const amount = plainDecimal(tx.amount);
  if (amount === undefined) return undefined;
  return {
    source_id: tx.transaction_id,
    account_id: accountGatewayId ?? null,
    posted_on: tx.pending ? null : tx.date,
    authorized_on: tx.authorized_date ?? (tx.pending ? tx.date : null),
    amount: negateDecimal(amount),
    currency: currencyOf(tx.iso_currency_code),
    description: tx.name ?? '',
    merchant_name: tx.merchant_name ?? null,
    // The detailed category tells groceries from restaurants; the catalogue maps it into its own set (design 8.3).
    provider_category: tx.personal_finance_category?.detailed ?? tx.personal_finance_category?.primary ?? null,
    pending: tx.pending,
  };
}

/** A holding's source id: the aggregator names a position by its account and security. */
export const holdingSourceId = (holding: Pick<PlaidHolding, 'account_id' | 'security_id'>) => `${holding.account_id}:${holding.security_id}`;

export function holdingRecord(holding: PlaidHolding, security: { name?: string | null; ticker_symbol?: string | null } | undefined, accountGatewayId: string | undefined, syncedAt: string) {
  return {
    source_id: holdingSourceId(holding),
    account_id: accountGatewayId ?? null,
    security_name: security?.name ?? null,
    ticker: security?.ticker_symbol ?? null,
    quantity: decimal(holding.quantity),
    price: decimal(holding.institution_price),
    value: decimal(holding.institution_value),
    cost_basis: decimal(holding.cost_basis),
    currency: currencyOf(holding.iso_currency_code),
    as_of: holding.institution_price_as_of ? `${holding.institution_price_as_of}T00:00:00Z` : syncedAt,
  };
}
