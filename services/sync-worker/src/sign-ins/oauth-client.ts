import { openCredentials } from '@pcg/shared/crypto';
import type { CommonQueryMethods } from 'slonik';
import { createSignInQueries, providerAppContext, ProviderAppSchema, type ProviderApp } from '@pcg/shared/sign-ins';
import { z } from 'zod';
import { transientClassifier } from '../connectors/kit/classifiers.ts';

/** What a sign-in of an `oauth` provider keeps, sealed on the sign-in. */
export const OAuthCredentialsSchema = z.object({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).nullable(),
  /** Epoch milliseconds; null when the provider gave no lifetime. */
  expiresAt: z.number().nullable(),
  /** The scopes the provider last reported as granted, so a connector reads only what it may (absent on older sign-ins). */
  scopes: z.array(z.string()).optional(),
  /** The provider's name of the signed-in account, for display (Microsoft: the ID token's `preferred_username`); kept across refreshes. */
  accountName: z.string().optional(),
});
export type OAuthCredentials = z.infer<typeof OAuthCredentialsSchema>;

/** RFC 6749 5.1 and 5.2, read leniently: providers add fields of their own. */
const TokenAnswerSchema = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  expires_in: z.coerce.number().positive().optional(),
  scope: z.string().optional(),
  /** OpenID Connect: present when `openid` was granted. */
  id_token: z.string().min(1).optional(),
});
const TokenErrorSchema = z.object({ error: z.string().regex(/^[\w.-]{1,64}$/) });

/**
 * What an OAuth error answer from a token endpoint (RFC 6749 5.2) asks of the gateway:
 * - `grant_gone`: only the person can help, by signing in again (`invalid_grant`; Microsoft's token
 *   endpoint also answers `interaction_required` and `consent_required`, and carries its AADSTS codes —
 *   an expired or revoked refresh token, a password change, MFA — inside `invalid_grant`);
 * - `app_refused`: the gateway's application credentials are refused (`invalid_client`: an unknown
 *   client or an expired secret, Microsoft's AADSTS7000215/7000222; `unauthorized_client`: the app may not
 *   use this grant, AADSTS700016 app not found): only new credentials in Settings help, not a sign-in;
 * - `transient`: the server is busy (`temporarily_unavailable`, `server_error`): try again later;
 * - `rejected`: the request itself was refused (`invalid_request`, `invalid_scope`, `unsupported_grant_type`…).
 */
export type TokenRefusal = 'grant_gone' | 'app_refused' | 'rejected';

const GRANT_GONE = new Set(['invalid_grant', 'interaction_required', 'consent_required']);
const APP_REFUSED = new Set(['invalid_client', 'unauthorized_client']);
const BUSY = new Set(['temporarily_unavailable', 'server_error']);

export type TokenAnswer =
  | { ok: true; credentials: OAuthCredentials; scope: string | undefined; idToken?: string }
  /** The provider answered with an OAuth error that is not an outage: `error` is its code. */
  | { ok: false; error: string; status: number; refusal: TokenRefusal };

/**
 * The provider could not be reached, or could not answer now: a network failure, a timeout, an answer
 * that is not OAuth, or a 429, 408, 5xx or `temporarily_unavailable` whatever its body. Try again later,
 * no sooner than `retryAfterMs` when the provider said so; `rateLimited` for a 429.
 */
export class ProviderUnreachableError extends Error {
  readonly retryAfterMs: number | undefined;
  readonly rateLimited: boolean;
  constructor(message: string, options: { retryAfterMs?: number; rateLimited?: boolean } = {}) {
    super(message);
    this.name = 'ProviderUnreachableError';
    this.retryAfterMs = options.retryAfterMs;
    this.rateLimited = options.rateLimited ?? false;
  }
}

export async function loadProviderApp(db: CommonQueryMethods, credentialsKey: Buffer, provider: string): Promise<ProviderApp | null> {
  const sealed = await createSignInQueries(db).sealedApp(provider);
  return sealed ? ProviderAppSchema.parse(openCredentials(credentialsKey, sealed, providerAppContext(provider))) : null;
}

/**
 * POSTs a form to the provider's token endpoint (code exchange or refresh). Redirects are not followed
 * (a token endpoint never redirects, and the form carries the client secret).
 */
export async function requestToken(
  tokenUrl: string,
  form: Record<string, string>,
  timeoutMs: number,
  previous: Pick<OAuthCredentials, 'refreshToken' | 'scopes' | 'accountName'> = { refreshToken: null },
): Promise<TokenAnswer> {
  let response: Response;
  try {
    response = await fetch(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString(),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch {
    throw new ProviderUnreachableError('the provider could not be reached');
  }
  const body: unknown = await response.json().catch(() => undefined);
  if (response.ok) {
    const parsed = TokenAnswerSchema.safeParse(body);
    if (!parsed.success) throw new ProviderUnreachableError('the provider answered the token request with something that is not a token');
    const { access_token, refresh_token, expires_in, scope, id_token } = parsed.data;
    return {
      ok: true,
      scope,
      ...(id_token ? { idToken: id_token } : {}),
      // A provider that does not rotate keeps the refresh token it gave before.
      credentials: {
        accessToken: access_token,
        refreshToken: refresh_token ?? previous.refreshToken,
        expiresAt: expires_in ? Date.now() + expires_in * 1000 : null,
        ...(scope !== undefined ? { scopes: scope.split(' ').filter(Boolean) } : previous.scopes ? { scopes: previous.scopes } : {}),
        ...(previous.accountName !== undefined ? { accountName: previous.accountName } : {}),
      },
    };
  }
  // A 429, 408 or 5xx is the server's state, not a verdict on the grant, even with an OAuth error body.
  const transient = transientClassifier({ status: response.status, headers: response.headers, text: '' });
  if (transient?.kind === 'rate_limited') {
    throw new ProviderUnreachableError(`the provider's token endpoint is rate limiting (HTTP ${response.status})`, { retryAfterMs: transient.retryAfterMs, rateLimited: true });
  }
  if (transient?.kind === 'retry_later') throw new ProviderUnreachableError(`the provider's token endpoint answered HTTP ${response.status}`, { retryAfterMs: transient.retryAfterMs });
  const refusal = TokenErrorSchema.safeParse(body);
  if (response.status < 400 || !refusal.success) throw new ProviderUnreachableError(`the provider's token endpoint answered HTTP ${response.status}`);
  const { error } = refusal.data;
  if (BUSY.has(error)) throw new ProviderUnreachableError(`the provider's token endpoint is busy (${error})`);
  return { ok: false, error, status: response.status, refusal: GRANT_GONE.has(error) ? 'grant_gone' : APP_REFUSED.has(error) ? 'app_refused' : 'rejected' };
}

/** The provider's id of the signed-in account: a GET with the new token, one JSON field. */
export async function readAccountId(account: { url: string; field: string }, accessToken: string, timeoutMs: number): Promise<string> {
  let response: Response;
  try {
    response = await fetch(account.url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  } catch {
    throw new ProviderUnreachableError('the provider could not be reached to name the account');
  }
  const body: unknown = await response.json().catch(() => undefined);
  const value = response.ok && typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[account.field] : undefined;
  if (typeof value !== 'string' && typeof value !== 'number') throw new ProviderUnreachableError('the provider did not name the signed-in account');
  return String(value);
}
