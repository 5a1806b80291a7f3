import type { OAuthSpec, RebaseUrl } from '@pcg/shared/providers';
import { z } from 'zod';
import { ProviderUnreachableError, readAccountId } from './oauth-client.ts';

/** The claims read from an ID token: the audience, and whatever names the account. */
const ClaimsSchema = z.looseObject({ aud: z.union([z.string(), z.array(z.string())]) });

/**
 * The claims of an ID token received straight from the token endpoint over TLS. OpenID Connect Core
 * 3.1.3.7 lets such a client use TLS in place of checking the signature; the audience is still checked,
 * so a token issued to another application is never taken for this one.
 */
function idTokenClaims(idToken: string, clientId: string): Record<string, unknown> {
  const payload = idToken.split('.')[1];
  let parsed: z.ZodSafeParseResult<z.infer<typeof ClaimsSchema>> | undefined;
  try {
    parsed = ClaimsSchema.safeParse(JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')));
  } catch {
    parsed = undefined;
  }
  if (!parsed?.success) throw new ProviderUnreachableError('the provider answered with an ID token that cannot be read');
  const audience = [parsed.data.aud].flat();
  if (!audience.includes(clientId)) throw new ProviderUnreachableError('the provider answered with an ID token issued to another application');
  return parsed.data;
}

/**
 * Names the account a sign-in granted: its provider id (which a re-sign-in must repeat) and, when the
 * provider gives one, a name to show. Through a GET with the access token (`{ url, field }`), or through
 * the ID token's claims (`{ idToken }`: Microsoft, whose GET /me needs `User.Read`, which the gateway
 * does not ask for; docs/decisions.md).
 */
export async function nameAccount(
  account: OAuthSpec['account'],
  answer: { accessToken: string; idToken?: string },
  context: { clientId: string; rebase: RebaseUrl; timeoutMs: number },
): Promise<{ id: string; name?: string }> {
  if ('url' in account) return { id: await readAccountId({ ...account, url: context.rebase(account.url) }, answer.accessToken, context.timeoutMs) };
  if (!answer.idToken) throw new ProviderUnreachableError('the provider returned no ID token to name the account (the sign-in must grant openid and profile)');
  const claims = idTokenClaims(answer.idToken, context.clientId);
  const id = claims[account.idToken.id];
  if (typeof id !== 'string' || id.length === 0) throw new ProviderUnreachableError(`the provider's ID token carries no '${account.idToken.id}' to name the account (the sign-in must grant openid and profile)`);
  const name = account.idToken.name ? claims[account.idToken.name] : undefined;
  return typeof name === 'string' && name.length > 0 ? { id, name } : { id };
}
