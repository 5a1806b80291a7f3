import type { z } from 'zod';
import { OAuthCredentialsSchema } from '../../sign-ins/oauth-client.ts';
import type { ConnectorContext } from '../connector-types.ts';
import { defaultClassifier } from '../kit/classifiers.ts';
import { nextPageToken, walkPages } from '../kit/paging.ts';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceAuthError, SourceUnavailableError } from '../kit/source-errors.ts';
import { withApiEnabled, type GoogleApiName } from './api-disabled.ts';

export function googleCredentials(context: ConnectorContext) {
  const parsed = OAuthCredentialsSchema.safeParse(context.credentials);
  if (!parsed.success) throw new SourceAuthError('the stored Google sign-in is incomplete; sign in again');
  return parsed.data;
}

/**
 * Google's APIs as one paged reader: Google's error bodies decide (403 `rateLimitExceeded` is a quota,
 * 410 `fullSyncRequired` and `EXPIRED_SYNC_TOKEN` an expired cursor, 401 a refresh, 403
 * `SERVICE_DISABLED` the `api` to enable), `pageToken` → `nextPageToken` until the last page, which
 * alone carries the sync token.
 */
export function googleReader(context: ConnectorContext, what: string, api: GoogleApiName) {
  const client = createSourceClient({ what, classifier: defaultClassifier, timeoutMs: context.requestTimeoutMs, signal: context.signal, maxRedirects: 0 });
  return async function* pages<P extends { nextPageToken?: string | null | undefined }>(url: string, query: Record<string, string>, schema: z.ZodType<P>): AsyncGenerator<P> {
    const fetchPage = async (token: string | undefined): Promise<P> => {
      const params = new URLSearchParams({ ...query, ...(token ? { pageToken: token } : {}) });
      // The token is read per page: a refresh during the walk replaced it.
      const body = await withApiEnabled(api, (classify) => client.json(`${url}?${params.toString()}`, { auth: { authorization: `Bearer ${googleCredentials(context).accessToken}` }, classify }));
      const parsed = schema.safeParse(body);
      if (!parsed.success) throw new SourceUnavailableError(`${what} answered in an unexpected shape`);
      return parsed.data;
    };
    yield* walkPages(fetchPage, nextPageToken, { what });
  };
}

export function parseEach<T>(context: ConnectorContext, what: string, schema: z.ZodType<T>, raw: readonly unknown[]): T[] {
  const parsed = raw.map((item) => schema.safeParse(item));
  const dropped = parsed.filter((result) => !result.success).length;
  if (dropped > 0) context.log.warn({ dropped, what }, 'records in an unexpected shape were skipped');
  return parsed.flatMap((result) => (result.success ? [result.data] : []));
}
