import type { z } from 'zod';
import type { ConnectorContext } from '../connector-types.ts';
import { defaultClassifier } from '../kit/classifiers.ts';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceTokenExpiredError, SourceUnavailableError } from '../kit/source-errors.ts';
import { chainClassifiers, type SourceClassifier } from '../kit/source-verdict.ts';
import { withApiEnabled } from '../google/api-disabled.ts';
import { googleCredentials } from '../google/google-api.ts';

export type GmailGet = <T>(path: string, params: URLSearchParams, schema: z.ZodType<T>, classify?: SourceClassifier) => Promise<T>;

/**
 * Gmail's API under `<base>/users/me`: the Google error bodies decide (403 `rateLimitExceeded` and
 * `userRateLimitExceeded` are a quota, never a sign-in; 403 `SERVICE_DISABLED` names the Gmail API to
 * enable), query parameters may repeat
 * (`metadataHeaders`, `historyTypes`), and the access token is read per request.
 *
 * An access token that expires during a sync (Google's last an hour; a full sync of a large mailbox at
 * the quota's pace takes longer) is refreshed here and the request sent again, instead of failing the
 * sync for the runner to start over: the requests in flight that meet the same 401 share one refresh,
 * and a second 401 with the new token goes to the runner as usual.
 */
export function gmailClient(context: ConnectorContext, apiBase: string): GmailGet {
  const client = createSourceClient({ what: 'Gmail', classifier: defaultClassifier, timeoutMs: context.requestTimeoutMs, signal: context.signal, maxRedirects: 0 });
  let refreshing: { rejected: string; done: Promise<void> } | undefined;
  const renew = async (rejected: string) => {
    if (googleCredentials(context).accessToken !== rejected) return;
    if (refreshing?.rejected !== rejected) refreshing = { rejected, done: context.refreshToken() };
    await refreshing.done;
  };
  const send = (url: string, classify: SourceClassifier | undefined) => {
    const token = googleCredentials(context).accessToken;
    const answer = withApiEnabled('Gmail API', (disabled) => client.json(url, { auth: { authorization: `Bearer ${token}` }, classify: classify ? chainClassifiers(disabled, classify) : disabled }));
    return { token, answer };
  };
  return async (path, params, schema, classify) => {
    const query = params.size > 0 ? `?${params.toString()}` : '';
    const url = `${apiBase}/users/me${path}${query}`;
    const first = send(url, classify);
    const body = await first.answer.catch(async (error: unknown) => {
      if (!(error instanceof SourceTokenExpiredError)) throw error;
      await renew(first.token);
      return send(url, classify).answer;
    });
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new SourceUnavailableError('Gmail answered in an unexpected shape');
    return parsed.data;
  };
}
