/** An account's type and subtype as the catalogue names them (the bank aggregator's words, reference 1.5). */
export type AccountKind = { type: string | null; subtype: string | null };

/**
 * The rule for sources that name no account type (the bank-link bridge, reference 2.4), from the account's
 * name, first rule that holds: a card (`card`, `visa`, `mastercard`, `amex`, `american express`) → credit /
 * credit card; `mortgage` → loan / mortgage; `student loan` → loan / student; `auto loan`, `car loan` → loan /
 * auto; `loan`, `line of credit`, `heloc` → loan; `401k` → investment / 401k; `ira`, `roth` → investment / ira;
 * `brokerage`, `invest…` or any holdings → investment / brokerage; `checking`, `chequing` → depository /
 * checking; `money market` → depository / money market; `savings`, `saver` → depository / savings; otherwise
 * both null (unknown). The database holds the same rule (`finance_inferred_account_kind`) for rows cached
 * before; a test checks the two agree.
 */
export function inferredAccountKind(name: string | null | undefined, hasHoldings: boolean): AccountKind {
  const n = (name ?? '').toLowerCase();
  const kind = (type: string | null, subtype: string | null): AccountKind => ({ type, subtype });
  if (/(credit card|\bcard\b|\bvisa\b|mastercard|\bamex\b|american express)/.test(n)) return kind('credit', 'credit card');
  if (/mortgage/.test(n)) return kind('loan', 'mortgage');
  if (/student loan/.test(n)) return kind('loan', 'student');
  if (/(auto|car) loan/.test(n)) return kind('loan', 'auto');
  if (/(\bloan\b|line of credit|heloc)/.test(n)) return kind('loan', null);
  if (/401 ?\(?k\)?/.test(n)) return kind('investment', '401k');
  if (/(\bira\b|\broth\b)/.test(n)) return kind('investment', 'ira');
  if (/(brokerage|invest)/.test(n) || hasHoldings) return kind('investment', 'brokerage');
  if (/(checking|chequing)/.test(n)) return kind('depository', 'checking');
  if (/money market/.test(n)) return kind('depository', 'money market');
  if (/(savings|\bsaver\b)/.test(n)) return kind('depository', 'savings');
  return kind(null, null);
}

/** Credit and loan balances are the amount owed, a positive number (the catalogue's convention). */
export const owesMoney = (kind: AccountKind) => kind.type === 'credit' || kind.type === 'loan';

/** The rule in words, for get_schema. */
export const ACCOUNT_KIND_RULE =
  "Sources that name no account type (the bank-link bridge, SimpleFIN) get type and subtype from the account name, first rule that holds: card/visa/mastercard/amex/american express → credit, credit card; mortgage → loan, mortgage; student loan → loan, student; auto or car loan → loan, auto; loan/line of credit/heloc → loan; 401k → investment, 401k; ira/roth → investment, ira; brokerage/invest… or holding positions → investment, brokerage; checking/chequing → depository, checking; money market → depository, money market; savings/saver → depository, savings; otherwise null (unknown).";
