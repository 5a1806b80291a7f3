/** The q-value an Accept header gives a media type, by its most specific range (`*\/*` does not count). */
function qualityOf(accept: string, type: string): number {
  let best = 0;
  for (const range of accept.split(',')) {
    const [media = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    if (media !== type) continue;
    const q = params.find((param) => param.startsWith('q='));
    const value = q === undefined ? 1 : Number(q.slice(2));
    if (Number.isFinite(value)) best = Math.max(best, value);
  }
  return best;
}

/**
 * Whether a request is a browser's navigation that wants a page: it names `text/html`, and not below
 * `application/json`. curl and `fetch` send `*\/*` and keep getting JSON, as does a client asking for JSON.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = qualityOf(accept, 'text/html');
  return html > 0 && html >= qualityOf(accept, 'application/json');
}
