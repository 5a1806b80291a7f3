import { z } from 'zod';
import { inferredAccountKind, mccCategory, owesMoney } from '@pcg/shared/finance';

/**
 * The bridge's Account Set (reference §2.3), read leniently: the bridge adds fields of its own (`extra`,
 * `payee`, `memo`), which are ignored. Amounts and balances are numeric strings, times epoch seconds.
 * Both shapes are read: v1 names each account's institution in its `org`; v2 (protocol-v2.md, "Account
 * Set", "Connection") drops `org` for a `connections` list that each account names by `conn_id`.
 */
const NumericString = z.string().max(64);
const EpochSeconds = z.number().int().nonnegative();

const TransactionSchema = z.object({
  id: z.string().min(1).max(256),
  posted: EpochSeconds,
  amount: NumericString,
  description: z.string().max(2000).default(''),
  transacted_at: EpochSeconds.optional(),
  pending: z.boolean().optional(),
  payee: z.string().max(500).optional(),
  // A guess at its place: the Bridge's change notes add an `mcc` (ISO 18245) field without saying where
  // (reference 2.3, [SF-V2]); read on the transaction, as a string or a number, when it is there.
  mcc: z.union([z.string().max(8), z.number().int()]).optional(),
});

const HoldingSchema = z.object({
  id: z.string().min(1).max(256),
  created: EpochSeconds.optional(),
  currency: z.string().max(200).optional(),
  cost_basis: NumericString.optional(),
  description: z.string().max(500).optional(),
  market_value: NumericString.optional(),
  shares: z.union([z.number(), NumericString]).optional(),
  symbol: z.string().max(50).optional(),
});

const AccountSchema = z.object({
  org: z
    .object({ domain: z.string().max(255).optional(), name: z.string().max(255).optional(), url: z.string().max(2000).optional(), id: z.string().max(256).optional(), 'sfin-url': z.string().max(2000).optional() })
    .default({}),
  /** v2: the bridge connection (one login at one bank) the account belongs to; its id is unique only within it. */
  conn_id: z.string().min(1).max(256).optional(),
  id: z.string().min(1).max(256),
  name: z.string().max(500),
  currency: z.string().max(2000),
  balance: NumericString,
  'available-balance': NumericString.optional(),
  'balance-date': EpochSeconds,
  transactions: z.array(TransactionSchema).default([]),
  holdings: z.array(HoldingSchema).optional(),
});

const ErrItemSchema = z.object({ code: z.string().max(64).optional(), msg: z.string().max(2000).optional(), message: z.string().max(2000).optional() });

/** v2's Connection: `org_url` is documented as the institution's domain name, shown as a URL in the samples. */
const ConnectionSchema = z.object({
  conn_id: z.string().min(1).max(256),
  name: z.string().max(500).optional(),
  org_id: z.string().max(256).optional(),
  org_name: z.string().max(500).optional(),
  org_url: z.string().max(2000).optional(),
});

export const AccountSetSchema = z.object({
  errors: z.array(z.string().max(2000)).default([]),
  errlist: z.array(ErrItemSchema).default([]),
  connections: z.array(ConnectionSchema).default([]),
  accounts: z.array(AccountSchema),
});
export type AccountSet = z.infer<typeof AccountSetSchema>;
export type BridgeAccount = AccountSet['accounts'][number];

const DECIMAL = /^-?\d+(\.\d+)?$/;

/** A numeric string as an exact decimal string (never through a float): a leading `+` dropped; undefined when it is not a number. */
export function decimalOf(value: string | number | undefined): string | undefined {
  if (value === undefined) return undefined;
  // `shares` arrives as a JSON number: its shortest form is the digits the bridge sent.
  const text = (typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value).trim().replace(/^\+/, '');
  return DECIMAL.test(text) ? text : undefined;
}

/** Epoch seconds as the UTC calendar date; 0 (a pending row's `posted`) is no date. */
export function dateOf(seconds: number | undefined): string | null {
  if (!seconds) return null;
  return new Date(seconds * 1000).toISOString().slice(0, 10);
}

const instantOf = (seconds: number): string => new Date(seconds * 1000).toISOString();

/** HTML-escaped, as the protocol asks of the user-displayable `errors` (reference §2.3). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** The bridge's error messages, escaped (v1 `errors`, v2 `errlist`), each once (a window of several requests repeats them). */
export function bridgeErrors(set: AccountSet): string[] {
  return [...new Set([...set.errors, ...set.errlist.map((item) => item.msg ?? item.message ?? item.code ?? 'unknown error')])].map(escapeHtml);
}

/** The last 4 digits in an account's name (spec 2.1's dedup key), when it shows them. */
export function maskOf(name: string): string | null {
  return /(\d{4})\D*$/.exec(name)?.[1] ?? null;
}

export type BridgeConnection = z.infer<typeof ConnectionSchema>;

function normalDomain(raw: string | undefined): string | null {
  return raw ? raw.trim().toLowerCase().replace(/^www\./, '') || null : null;
}

/** A host from a URL, or the text itself when it is a bare domain name (v2's `org_url` may be either). */
function hostOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    return new URL(value).hostname;
  } catch {
    return /^[a-z0-9.-]+\.[a-z]{2,}$/i.test(value.trim()) ? value.trim() : undefined;
  }
}

export type Institution = { name: string | null; domain: string | null };

/** The account's institution: v1's `org`, else v2's connection entry (its `org_name`, else the connection's name). */
export function institutionOf(account: BridgeAccount, connection: BridgeConnection | undefined): Institution {
  const domain = normalDomain(account.org.domain ?? hostOf(account.org.url)) ?? normalDomain(hostOf(connection?.org_url));
  return { name: account.org.name ?? connection?.org_name ?? connection?.name ?? domain, domain };
}

/** ISO 4217 codes only; a custom currency is a URL at the bridge, which the catalogue cannot hold as a code. */
const currencyOf = (value: string | undefined): string | null => (value && /^[A-Z]{3}$/.test(value) ? value : null);

/** Transaction and holding source ids are unique within their account only: prefixed with the account's key (which holds no `:`). */
export const childPrefix = (accountKey: string) => `${accountKey}:`;

/** A decimal string with the other sign (zero stays unsigned). */
const negated = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : /^-?0(\.0*)?$/.test(value) ? value.replace(/^-/, '') : value.startsWith('-') ? value.slice(1) : `-${value}`;

/**
 * The bridge names no account type (reference 2.4): type and subtype are inferred from the name (shared
 * finance/account-types.ts). A debt is a negative balance at the bridge, whose amounts are positive when money
 * enters the account (so a card purchase lowers it); for a credit or loan account the catalogue's balance is the
 * amount owed, a positive number, so the sign turns. The card sign is unconfirmed in the reference: this
 * follows from the transaction sign, not from a sample.
 */
export function accountRecord(account: BridgeAccount, key: string, institution: Institution) {
  const kind = inferredAccountKind(account.name, (account.holdings?.length ?? 0) > 0);
  const owed = owesMoney(kind);
  const balance = decimalOf(account.balance);
  return {
    source_id: key,
    institution_name: institution.name,
    institution_domain: institution.domain,
    name: account.name,
    mask: maskOf(account.name),
    type: kind.type,
    subtype: kind.subtype,
    currency: currencyOf(account.currency),
    balance_current: (owed ? negated(balance) : balance) ?? null,
    balance_available: owed ? null : (decimalOf(account['available-balance']) ?? balance ?? null),
    balance_as_of: instantOf(account['balance-date']),
  };
}

/**
 * A bridge transaction. Its amount is positive when money enters the account (reference §2.3), which
 * is already the gateway's convention (negative = money leaves), so the sign is kept as sent.
 */
export function transactionRecord(account: BridgeAccount, key: string, accountGatewayId: string | undefined, tx: BridgeAccount['transactions'][number]) {
  const amount = decimalOf(tx.amount);
  if (amount === undefined) return undefined;
  const pending = tx.pending === true || tx.posted === 0;
  return {
    source_id: `${childPrefix(key)}${tx.id}`,
    account_id: accountGatewayId ?? null,
    posted_on: dateOf(tx.posted),
    // A pending row's date (design 8.3): when it happened, else (a guess: the protocol gives a pending row no
    // other date) the day of the balance it was reported with.
    authorized_on: dateOf(tx.transacted_at) ?? (pending ? dateOf(account['balance-date']) : null),
    amount,
    currency: currencyOf(account.currency),
    description: tx.description,
    merchant_name: tx.payee ?? null,
    provider_category: mccCategory(tx.mcc),
    pending,
  };
}

export function holdingRecord(account: BridgeAccount, key: string, accountGatewayId: string | undefined, holding: NonNullable<BridgeAccount['holdings']>[number]) {
  return {
    source_id: `${childPrefix(key)}${holding.id}`,
    account_id: accountGatewayId ?? null,
    security_name: holding.description ?? holding.symbol ?? null,
    ticker: holding.symbol ?? null,
    quantity: decimalOf(holding.shares) ?? null,
    value: decimalOf(holding.market_value) ?? null,
    cost_basis: decimalOf(holding.cost_basis) ?? null,
    currency: currencyOf(holding.currency ?? account.currency),
    as_of: instantOf(account['balance-date']),
  };
}
