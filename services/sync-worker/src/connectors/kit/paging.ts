import { SourceError } from './source-errors.ts';

/** A source paged in a loop (a token seen twice) or past the page cap: a bug on one side, never an endless sync. */
export class SourcePagingError extends SourceError {}

/** Default cap on pages in one walk; a connector with longer walks passes its own. */
export const DEFAULT_MAX_PAGES = 1_000;

export type PagingOptions = {
  /** How the source is named in messages. */
  what: string;
  /** Pages at most; default 1000. */
  maxPages?: number;
};

/**
 * Walks a paged answer: `fetchPage(undefined)` first, then `fetchPage(token)` with each next token, until
 * `nextOf` gives none. A token seen before is an error (`SourcePagingError`), and so is a walk longer than
 * `maxPages`; the pages already yielded stay with the caller, which stores its cursor only at the end.
 */
export async function* walkPages<P>(
  fetchPage: (token: string | undefined) => Promise<P>,
  nextOf: (page: P) => string | undefined,
  options: PagingOptions,
): AsyncGenerator<P> {
  const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
  const seen = new Set<string>();
  let token: string | undefined;
  for (let count = 1; ; count += 1) {
    const page = await fetchPage(token);
    yield page;
    const next = nextOf(page);
    if (next === undefined) return;
    if (seen.has(next)) throw new SourcePagingError(`${options.what} sent the same page token twice; paging stopped`);
    if (count >= maxPages) throw new SourcePagingError(`${options.what} had more than ${maxPages} pages; paging stopped`);
    seen.add(next);
    token = next;
  }
}

const nonEmpty = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined);

/** Google's `nextPageToken` (Gmail, Calendar, People): absent or empty on the last page. */
export const nextPageToken = (page: unknown): string | undefined => nonEmpty((page as { nextPageToken?: unknown } | null)?.nextPageToken);

/** Graph's `@odata.nextLink`: an absolute URL to GET as is; the last page of a delta round has `@odata.deltaLink` instead. */
export const odataNextLink = (page: unknown): string | undefined => nonEmpty((page as Record<string, unknown> | null)?.['@odata.nextLink']);

/** Plaid's `/transactions/sync`: `next_cursor` is the next page only while `has_more` is true. */
export const cursorWhileHasMore = (page: unknown): string | undefined => {
  const body = page as { has_more?: unknown; next_cursor?: unknown } | null;
  return body?.has_more === true ? nonEmpty(body.next_cursor) : undefined;
};
