import { errorReasons } from '../kit/error-bodies.ts';
import { transientClassifier } from '../kit/classifiers.ts';
import { parseRetryAfter, type SourceClassifier } from '../kit/source-verdict.ts';

/**
 * Item errors only the person can mend, at the bank and then through a link in update mode (reference
 * §1.6; Plaid's Item errors page, https://plaid.com/docs/errors/item/: USER_SETUP_REQUIRED, INSUFFICIENT_CREDENTIALS
 * and MFA_NOT_SUPPORTED all end with "prompt the user to re-authenticate with Plaid Link" / "link again").
 */
export const NEEDS_PERSON: ReadonlySet<string> = new Set([
  'ITEM_LOGIN_REQUIRED',
  'INVALID_ACCESS_TOKEN',
  'ITEM_NOT_FOUND',
  'USER_PERMISSION_REVOKED',
  'ACCESS_NOT_GRANTED',
  'INVALID_CREDENTIALS',
  'ITEM_LOCKED',
  'NO_ACCOUNTS',
  'USER_SETUP_REQUIRED',
  'INSUFFICIENT_CREDENTIALS',
  'MFA_NOT_SUPPORTED',
]);
/** The bank or the aggregator is briefly unable to answer: try again later. */
const TRANSIENT = new Set(['PRODUCT_NOT_READY', 'INSTITUTION_DOWN', 'INSTITUTION_NOT_RESPONDING', 'INSTITUTION_NOT_AVAILABLE', 'INSTITUTION_ERROR', 'API_ERROR', 'PLANNED_MAINTENANCE']);

/**
 * The aggregator answers most errors with HTTP 400 and says what it meant in `error_type`/`error_code`
 * (reference §1.6), so the body decides before the status: a login to repair needs sign-in, a rate
 * limit (429, `RATE_LIMIT_EXCEEDED`; no `Retry-After` is documented, so a minute) waits, an unready
 * product or a bank that is down is retried; anything else is refused.
 */
export const plaidClassifier: SourceClassifier = (answer) => {
  const reasons = errorReasons(answer.text);
  if (reasons.some((reason) => NEEDS_PERSON.has(reason))) return { kind: 'needs_sign_in' };
  if (answer.status === 429 || reasons.includes('RATE_LIMIT_EXCEEDED')) return { kind: 'rate_limited', retryAfterMs: parseRetryAfter(answer.headers.get('retry-after')) };
  if (reasons.some((reason) => TRANSIENT.has(reason))) return { kind: 'retry_later' };
  return transientClassifier(answer) ?? { kind: 'rejected' };
};

/** What the person is asked to do, per item error the aggregator documents (Plaid's Item errors page, troubleshooting steps). */
const PLAIN_REASONS: Readonly<Record<string, string>> = {
  ITEM_LOGIN_REQUIRED: "the bank asks for its login to be repaired (ITEM_LOGIN_REQUIRED): open the aggregator's sign-in again from the Console to repair it; the data already synced is kept",
  USER_SETUP_REQUIRED:
    "the bank wants something done on its own website first, such as accepting new terms, resetting the password or finishing the account's setup (USER_SETUP_REQUIRED): log in at the bank, do it, then open the aggregator's sign-in again from the Console; the data already synced is kept",
  INSUFFICIENT_CREDENTIALS:
    "the bank's own sign-in was left before it finished, so the aggregator was not given access (INSUFFICIENT_CREDENTIALS): open the aggregator's sign-in again from the Console and complete the bank's sign-in; the data already synced is kept",
  MFA_NOT_SUPPORTED:
    "the bank asks for a kind of two-step check the aggregator cannot answer for this bank (MFA_NOT_SUPPORTED): switch the bank's two-step check to another kind if it offers one, then open the aggregator's sign-in again from the Console; the data already synced is kept",
};

/** What the connection says when the item needs the person (spec 2.1: health with the reason). */
export function reasonOf(error: { error_code: string; error_message?: string | null }): string {
  return PLAIN_REASONS[error.error_code] ?? `the bank aggregator refused the item (${error.error_code}): open the aggregator's sign-in again from the Console`;
}
