import { describe, expect, it } from 'vitest';
import { cursorWhileHasMore, nextPageToken, odataNextLink, SourcePagingError, walkPages } from '../../src/connectors/kit/paging.ts';

async function collect<P>(walk: AsyncGenerator<P>): Promise<P[]> {
  const pages: P[] = [];
  for await (const page of walk) pages.push(page);
  return pages;
}

/** A paged source as a map from the token asked for (`''` for the first page) to the page answered. */
function pagedSource(pages: Record<string, unknown>) {
  const asked: Array<string | undefined> = [];
  return {
    asked,
    fetch: async (token: string | undefined) => {
      asked.push(token);
      const page = pages[token ?? ''];
      if (page === undefined) throw new Error(`no page for ${token}`);
      return page;
    },
  };
}

describe('paging', () => {
  it('follows nextPageToken to the page without one', async () => {
    const source = pagedSource({ '': { items: [1], nextPageToken: 'p2' }, p2: { items: [2], nextPageToken: 'p3' }, p3: { items: [3], nextSyncToken: 's' } });
    const pages = await collect(walkPages(source.fetch, nextPageToken, { what: 'Calendar' }));
    expect(pages.map((page) => (page as { items: number[] }).items)).toEqual([[1], [2], [3]]);
    expect(source.asked).toEqual([undefined, 'p2', 'p3']);
  });

  it('follows @odata.nextLink verbatim and ends on the page with the deltaLink', async () => {
    const next = 'http://graph.test/v1.0/me/messages/delta?$skiptoken=abc';
    const source = pagedSource({ '': { value: [1], '@odata.nextLink': next }, [next]: { value: [2], '@odata.deltaLink': 'http://graph.test/delta?$deltatoken=z' } });
    const pages = await collect(walkPages(source.fetch, odataNextLink, { what: 'Graph' }));
    expect(pages).toHaveLength(2);
    expect(source.asked).toEqual([undefined, next]);
  });

  it('follows next_cursor only while has_more is true', async () => {
    const source = pagedSource({ '': { added: [1], next_cursor: 'c1', has_more: true }, c1: { added: [2], next_cursor: 'c2', has_more: false } });
    const pages = await collect(walkPages(source.fetch, cursorWhileHasMore, { what: 'the bank' }));
    expect(pages).toHaveLength(2);
    expect(source.asked).toEqual([undefined, 'c1']);
  });

  it('a token sent twice is an error, not an endless loop', async () => {
    const source = pagedSource({ '': { nextPageToken: 'a' }, a: { nextPageToken: 'b' }, b: { nextPageToken: 'a' } });
    await expect(collect(walkPages(source.fetch, nextPageToken, { what: 'Gmail' }))).rejects.toThrow(new SourcePagingError('Gmail sent the same page token twice; paging stopped'));
    expect(source.asked).toEqual([undefined, 'a', 'b']);
  });

  it('a walk past the page cap is an error', async () => {
    let asked = 0;
    const endless = async () => ({ nextPageToken: `t${++asked}` });
    await expect(collect(walkPages(endless, nextPageToken, { what: 'Gmail', maxPages: 5 }))).rejects.toBeInstanceOf(SourcePagingError);
    expect(asked).toBe(5);
  });
});
