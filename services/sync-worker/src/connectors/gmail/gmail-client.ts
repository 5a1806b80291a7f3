import type { z } from 'zod';
import type { ConnectorContext } from '../connector-types.ts';
import { defaultClassifier } from '../kit/classifiers.ts';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceUnavailableError } from '../kit/source-errors.ts';
import type { SourceClassifier } from '../kit/source-verdict.ts';
import { googleCredentials } from '../google/google-api.ts';

export type GmailGet = <T>(path: string, params: URLSearchParams, schema: z.ZodType<T>, classify?: SourceClassifier) => Promise<T>;

/**
 * Gmail's API under `<base>/users/me`: the Google error bodies decide (403 `rateLimitExceeded` and
 * `userRateLimitExceeded` are a quota, never a sign-in), query parameters may repeat
 * (`metadataHeaders`, `historyTypes`), and the access token is read per request, so one refreshed
 * during a sync is used from then on.
 */
export function gmailClient(context: ConnectorContext, apiBase: string): GmailGet {
  const client = createSourceClient({ what: 'Gmail', classifier: defaultClassifier, timeoutMs: context.requestTimeoutMs, signal: context.signal, maxRedirects: 0 });
  return async (path, params, schema, classify) => {
    const query = params.size > 0 ? `?${params.toString()}` : '';
    const body = await client.json(`${apiBase}/users/me${path}${query}`, { auth: { authorization: `Bearer ${googleCredentials(context).accessToken}` }, ...(classify ? { classify } : {}) });
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new SourceUnavailableError('Gmail answered in an unexpected shape');
    return parsed.data;
  };
}
