import { OAuthCredentialsSchema } from '../../sign-ins/oauth-client.ts';
import type { ConnectorContext } from '../connector-types.ts';
import { defaultClassifier } from '../kit/classifiers.ts';
import { errorReasons } from '../kit/error-bodies.ts';
import { odataNextLink, walkPages } from '../kit/paging.ts';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceAuthError, SourceUnavailableError } from '../kit/source-errors.ts';
import { chainClassifiers, readRetryAfter, type SourceClassifier } from '../kit/source-verdict.ts';

/** Items asked for per page (Graph's default is 10). */
const PAGE_SIZE = 100;
/** A delta round longer than this many pages is a loop on one side, not a mailbox. */
const MAX_PAGES = 5_000;

/**
 * Graph's codes for a delta token it no longer honours, compared without case: "Use delta query" (Token
 * duration) says an expired token gets "a 40X-series error with error codes such as `syncStateNotFound`";
 * "Microsoft Graph error responses" (Code property) lists `syncStateNotFound` and `resyncRequired`, and
 * `resyncRequired` again among the detailed codes of `innererror`; `syncStateInvalid` and the PascalCase
 * `SyncStateNotFound` are what other clients have met.
 */
const RESYNC_CODES = new Set(['syncstatenotfound', 'syncstateinvalid', 'resyncrequired']);

/** Every `code` of a Graph error body, the nested `innererror` ones included ("loop through all the error codes"). */
function graphErrorCodes(text: string): string[] {
  const codes = errorReasons(text);
  try {
    let inner = (JSON.parse(text) as { error?: { innererror?: unknown; innerError?: unknown } }).error;
    for (let depth = 0; depth < 8 && inner; depth += 1) {
      const next = (inner.innererror ?? inner.innerError) as { code?: unknown; innererror?: unknown; innerError?: unknown } | undefined;
      if (typeof next?.code === 'string') codes.push(next.code);
      inner = next;
    }
  } catch {
    // Not JSON: no codes beyond errorReasons'.
  }
  return codes;
}

/**
 * Graph's own reading of a failed answer. A 410 (Synchronization reset on the same page) or a 4xx with a
 * resync code means the delta must restart from scratch (the sync runner then syncs once in full); a 503
 * that says when to come back is throttling (reference §6.4), waited out like a 429 without using an
 * attempt; everything else as the default classifier.
 */
export const graphClassifier: SourceClassifier = chainClassifiers(({ status, text }) => {
  if (status === 410) return { kind: 'cursor_expired' };
  if (status >= 400 && status < 500 && graphErrorCodes(text).some((code) => RESYNC_CODES.has(code.toLowerCase()))) return { kind: 'cursor_expired' };
  return undefined;
}, ({ status, headers }) => {
  const retryAfterMs = status === 503 ? readRetryAfter(headers.get('retry-after')) : undefined;
  return retryAfterMs === undefined ? undefined : { kind: 'rate_limited', retryAfterMs };
}, defaultClassifier);

/** One page of a delta round: the items, and either the next page or the next round. */
type DeltaPage = { value: Array<Record<string, unknown>>; '@odata.nextLink'?: string; '@odata.deltaLink'?: string };

function readPage(raw: unknown): DeltaPage {
  const page = raw as Partial<DeltaPage> | null;
  if (!page || !Array.isArray(page.value) || !page.value.every((item) => item !== null && typeof item === 'object')) {
    throw new SourceUnavailableError('Graph answered a delta page in an unexpected shape');
  }
  return page as DeltaPage;
}

/**
 * Graph as a connector reads it: the sign-in's bearer token, the Prefer headers each call needs, and
 * delta rounds walked through `@odata.nextLink` to the `@odata.deltaLink` (stored whole, replayed as is).
 * `apiBase` is Graph's v1.0 address (or its stand-in); relative paths are read under it.
 */
export function graphClient(context: ConnectorContext, apiBase: string) {
  const client = createSourceClient({ what: 'Microsoft Graph', classifier: graphClassifier, timeoutMs: context.requestTimeoutMs, signal: context.signal });
  const auth = () => {
    const parsed = OAuthCredentialsSchema.safeParse(context.credentials);
    if (!parsed.success) throw new SourceAuthError('the stored Microsoft credentials are incomplete');
    return { authorization: `Bearer ${parsed.data.accessToken}` };
  };
  const get = (url: string, prefer: readonly string[] = []) =>
    client.json(url.startsWith('http') ? url : `${apiBase}${url}`, { auth: auth(), headers: prefer.length > 0 ? { prefer: prefer.join(', ') } : {} });

  return {
    get,
    /** Every item of a paged list (`@odata.nextLink` followed to the end), in order. */
    async list(first: string, prefer: readonly string[] = []): Promise<Array<Record<string, unknown>>> {
      const items: Array<Record<string, unknown>> = [];
      const pages = walkPages<DeltaPage>((next) => get(next ?? first, [...prefer, `odata.maxpagesize=${PAGE_SIZE}`]).then(readPage), odataNextLink, { what: 'Microsoft Graph', maxPages: MAX_PAGES });
      for await (const page of pages) items.push(...page.value);
      return items;
    },
    /**
     * Walks one delta round from `first` (a path with its query options, or a stored deltaLink), handing
     * each page's items to `onItems`; returns the round's deltaLink.
     */
    async deltaRound(first: string, prefer: readonly string[], onItems: (items: Array<Record<string, unknown>>) => Promise<void>): Promise<string> {
      let deltaLink: string | undefined;
      const pages = walkPages<DeltaPage>((next) => get(next ?? first, [...prefer, `odata.maxpagesize=${PAGE_SIZE}`]).then(readPage), odataNextLink, { what: 'Microsoft Graph', maxPages: MAX_PAGES });
      for await (const page of pages) {
        await onItems(page.value);
        deltaLink = page['@odata.deltaLink'] ?? deltaLink;
      }
      if (!deltaLink) throw new SourceUnavailableError('Microsoft Graph ended a delta round without a deltaLink');
      return deltaLink;
    },
  };
}

export type GraphClient = ReturnType<typeof graphClient>;

/** `@removed` rows are deletions (or items that left the round's scope); the rest are items as they are now. */
export function splitRemoved(items: ReadonlyArray<Record<string, unknown>>): { present: Array<Record<string, unknown>>; removed: string[] } {
  const present: Array<Record<string, unknown>> = [];
  const removed: string[] = [];
  for (const item of items) {
    if ('@removed' in item) {
      if (typeof item.id === 'string') removed.push(item.id);
    } else present.push(item);
  }
  return { present, removed };
}
