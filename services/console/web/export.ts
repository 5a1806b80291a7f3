import { call, download, errorText } from './api.ts';
import { h, labelled, notice, replace, select } from './dom.ts';
import { SECTORS } from './types.ts';

export const EXPORT_NOTE = 'An export is recorded in the ledger as the operator’s export act. The ledger’s own Export CSV, of the rows on screen, is not.';
export const MERGED_COPIES_NOTE =
  'Merged copies are left out unless you ask for them: rows of an account another connection also delivers, kept once as agents read them.';

/** Export (spec 2.3, 6): a download of one sector's cached data, as JSON Lines or CSV. */
export function renderExport(root: HTMLElement): void {
  const sector = select(SECTORS.map((name) => [name, name] as const));
  const format = select([
    ['jsonl', 'JSON Lines (one record a line)'],
    ['csv', 'CSV (spreadsheet; formula-looking text prefixed with an apostrophe)'],
  ]);
  const includeMerged = h('input', { type: 'checkbox', name: 'includeMergedCopies' });
  const message = h('div', { class: 'messages' });
  const form = h(
    'form',
    { class: 'export', 'aria-label': 'Export a sector' },
    labelled('Sector', sector),
    labelled('Format', format),
    labelled('Include merged copies', includeMerged),
    h('p', { class: 'hint' }, MERGED_COPIES_NOTE),
    h('p', { class: 'hint' }, EXPORT_NOTE),
    h('button', { type: 'submit' }, 'Download'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const body = includeMerged.checked ? { format: format.value, includeMergedCopies: true } : { format: format.value };
        const response = await call('POST', `/api/export/${encodeURIComponent(sector.value)}`, body);
        const text = await response.text();
        const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? `${sector.value}.${format.value}`;
        download(name, text, response.headers.get('content-type') ?? 'text/plain');
        const copies = response.headers.get('x-export-merged-copies-note');
        replace(message, notice(`Exported ${response.headers.get('x-export-count') ?? '?'} records of ${sector.value} as ${name}.${copies ? ` ${copies}` : ''}`, 'ok'));
      } catch (error) {
        replace(message, notice(errorText(error), 'error'));
      }
    })();
  });
  replace(root, form, message);
}
