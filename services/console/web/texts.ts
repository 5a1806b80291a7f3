/**
 * The Console page's fixed texts and names, with no browser code, so the Console's tests import the same
 * constants the page shows.
 */

/** Spec 8: hosted agents remember a failed reach for about five minutes. */
export const RETRY_GUIDANCE =
  'Hosted agents remember a failed connection for about five minutes: after fixing the public origin or the proxy, wait that long before trying again.';

/** Spec 4.5 and 8: the Console's page of the record. */
export const LEDGER_PAGE = 100;

/** The API's field names, in its order: the header line of the ledger's Export CSV. */
export const LEDGER_CSV_HEADERS = ['id', 'agent_id', 'tool', 'sector', 'decision', 'deny_reason', 'args', 'result_count', 'outcome', 'request_id', 'created_at'] as const;

/** Spec 5 rule 1: the expiry choices the Console offers, and no other. */
export const EXPIRY_CHOICES = [
  ['', 'Never'],
  ['30', '30 days'],
  ['60', '60 days'],
  ['90', '90 days'],
] as const;

export const KEY_ONCE = 'Copy the key now: it will not be shown again. A lost key is replaced by rotating it.';
export const SESSIONS_END = 'Saving ends the agent’s live sessions; it reconnects with the same key.';
export const CLOUD_KEYS_NOTE = 'Cloud clients (hosted agents signing in through the public URL) need a key with an expiry: a key that never expires is refused there.';

/** Said above the bridge's own text when it refuses a setup token (403: unknown or already claimed). */
export const CLAIM_REFUSED_TITLE = 'Possible compromise:';

/** What the two answers to an account match do, said where the operator chooses (spec 2.1). */
export const MATCH_HINT =
  'Two connections deliver an account at the same institution, and at least one of them does not show its last 4 digits. "Same account" shows it to agents once, from the connection created first, and counts its transactions once; "Keep separate" shows both. Either answer stays until you change it.';
