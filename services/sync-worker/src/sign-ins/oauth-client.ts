import { openCredentials } from '@pcg/shared/crypto';
import type { CommonQueryMethods } from 'slonik';
import { createSignInQueries, providerAppContext, ProviderAppSchema, type ProviderApp } from '@pcg/shared/sign-ins';
import { z } from 'zod';


/** What a sign-in of an `oauth` provider keeps, sealed on the sign-in. */
export const OAuthCredentialsSchema = z.object({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).nullable(),
  /** Epoch milliseconds; null when the provider gave no lifetime. */
  expiresAt: z.number().nullable(),
  /** The scopes the provider last reported as granted, so a connector reads only what it may (absent on older sign-ins). */
  scopes: z.array(z.string()).optional(),
});
export type OAuthCredentials = z.infer<typeof OAuthCredentialsSchema>;

/** RFC 6749 5.1 and 5.2, read leniently: providers add fields of their own. */
const TokenAnswerSchema = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  expires_in: z.coerce.number().positive().optional(),
  scope: z.string().optional(),
});
const TokenErrorSchema = z.object({ error: z.string().regex(/^[\w.-]{1,64}$/) });

export type TokenAnswer =
  | { ok: true; credentials: OAuthCredentials; scope: string | undefined }
  /** The provider answered with an OAuth error (`invalid_grant`, `invalid_client`, …): a refusal, not an outage. */
  | { ok: false; error: string };

/** The provider could not be reached or answered something that is not OAuth (5xx, timeout, garbage): try again later. */
export class ProviderUnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderUnreachableError';
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
  previous: Pick<OAuthCredentials, 'refreshToken' | 'scopes'> = { refreshToken: null },
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
    const { access_token, refresh_token, expires_in, scope } = parsed.data;
    return {
      ok: true,
      scope,
      // A provider that does not rotate keeps the refresh token it gave before.
      credentials: {
        accessToken: access_token,
        refreshToken: refresh_token ?? previous.refreshToken,
        expiresAt: expires_in ? Date.now() + expires_in * 1000 : null,
        ...(scope !== undefined ? { scopes: scope.split(' ').filter(Boolean) } : previous.scopes ? { scopes: previous.scopes } : {}),
      },
    };
  }
  const refusal = TokenErrorSchema.safeParse(body);
  if (response.status >= 400 && response.status < 500 && refusal.success) return { ok: false, error: refusal.data.error };
  throw new ProviderUnreachableError(`the provider's token endpoint answered ${response.status}`);
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
