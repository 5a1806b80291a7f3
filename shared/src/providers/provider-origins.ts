import { z } from 'zod';

const origin = z
  .url({ protocol: /^https?$/, error: 'must be an http:// or https:// origin' })
  .refine((value) => {
    const url = new URL(value);
    return !url.username && !url.password && !url.search && !url.hash && (url.pathname === '/' || url.pathname === '');
  }, { error: 'must be an origin only (no path, user, query or fragment)' })
  .transform((value) => new URL(value).origin);

/**
 * `<PROVIDER>_BASE_URL` (design 4.1): an origin that replaces every real origin of a provider, so tests
 * and the demo point the sign-in and the connector at a local double. Unset: the provider's real hosts.
 */
export const providerOriginsConfig = z.object({
  /** Replaces `https://api.prod.whoop.com` (sign-in, token and API). */
  WHOOP_BASE_URL: origin.optional(),
  /** Replaces every Google origin (accounts, oauth2, gmail, www.googleapis.com, people). */
  GOOGLE_BASE_URL: origin.optional(),
  /** Replaces both of the bank aggregator's API origins (sandbox and production). */
  PLAID_BASE_URL: origin.optional(),
  /** Replaces the identity platform's `https://login.microsoftonline.com` (authorize and token). */
  MICROSOFT_LOGIN_BASE_URL: origin.optional(),
  /** Replaces `https://graph.microsoft.com` (the account's `/me` and the API). */
  MICROSOFT_GRAPH_BASE_URL: origin.optional(),
});
export type ProviderOriginsConfig = z.output<typeof providerOriginsConfig>;

/** The real origins each setting stands in for. */
const REAL_ORIGINS: Record<keyof ProviderOriginsConfig, readonly string[]> = {
  WHOOP_BASE_URL: ['https://api.prod.whoop.com'],
  GOOGLE_BASE_URL: ['https://accounts.google.com', 'https://oauth2.googleapis.com', 'https://gmail.googleapis.com', 'https://www.googleapis.com', 'https://people.googleapis.com'],
  PLAID_BASE_URL: ['https://sandbox.plaid.com', 'https://production.plaid.com'],
  MICROSOFT_LOGIN_BASE_URL: ['https://login.microsoftonline.com'],
  MICROSOFT_GRAPH_BASE_URL: ['https://graph.microsoft.com'],
};

/** Maps a provider's real address onto its configured stand-in; any other address is returned unchanged. */
export type RebaseUrl = (url: string) => string;

export function createOriginRebaser(config: Partial<ProviderOriginsConfig>): RebaseUrl {
  const replacements = new Map<string, string>();
  for (const [setting, origins] of Object.entries(REAL_ORIGINS) as Array<[keyof ProviderOriginsConfig, readonly string[]]>) {
    const replacement = config[setting];
    if (replacement) for (const real of origins) replacements.set(real, replacement);
  }
  return (url) => {
    const parsed = new URL(url);
    const replacement = replacements.get(parsed.origin);
    return replacement ? `${replacement}${parsed.pathname}${parsed.search}` : url;
  };
}

/** No stand-ins: every provider at its real address. */
export const realOrigins: RebaseUrl = (url) => url;
