import { api, errorText } from './api.ts';
import { h, labelled, notice, replace, select, table, withCodeWords } from './dom.ts';

type SchemaObject = {
  name: string;
  sector: string;
  description: string;
  fields: Array<{ name: string; type: string; description: string; unit?: string; filterable: boolean; sortable: boolean }>;
  notes: string[];
  fieldDocs: Record<string, string>;
};

export const LIVE_READ_NOTE = 'A live read asks the source itself, through the sync-worker. It is a Console act: the ledger records it as the operator’s fetch_live.';

/** A cell's text: JSON for objects and lists, the value itself otherwise; always text, never markup. */
const cellText = (value: unknown) => (value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value));

function rowsTable(caption: string, rows: Array<Record<string, unknown>>): HTMLElement {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  return table(caption, columns, rows.map((row) => columns.map((column) => cellText(row[column]))), 'No rows.');
}

function schemaAside(object: SchemaObject | undefined): HTMLElement {
  if (!object) return h('aside', { class: 'schema' });
  return h(
    'aside',
    { class: 'schema', 'aria-label': `Schema of ${object.name}` },
    h('h3', {}, object.name),
    h('p', {}, withCodeWords(object.description)),
    object.notes.length ? h('h4', {}, 'Notes') : null,
    object.notes.length ? h('ul', {}, ...object.notes.map((note) => h('li', {}, withCodeWords(note)))) : null,
    h('h4', {}, 'Fields'),
    h(
      'dl',
      { class: 'fields' },
      ...object.fields.flatMap((field) => [
        h('dt', {}, h('code', {}, field.name), h('span', { class: 'muted' }, ` ${field.type}${field.unit ? `, ${field.unit}` : ''}${field.filterable ? '' : ', not filterable'}`)),
        h('dd', {}, withCodeWords(field.description), object.fieldDocs[field.name] ? h('span', { class: 'field-doc' }, ' ', withCodeWords(object.fieldDocs[field.name] ?? '')) : null),
      ]),
    ),
  );
}

/**
 * The data inspector (spec 4.4, 6): the operator's query over every sector through the agents' engine
 * (`/api/data`, not recorded), a record by id, and a live read of the source (recorded), with the schema's
 * notes beside them.
 */
export async function renderInspector(root: HTMLElement): Promise<void> {
  let objects: SchemaObject[];
  try {
    objects = (await api<{ objects: SchemaObject[] }>('GET', '/api/operator/schema')).objects;
  } catch (error) {
    replace(root, notice(errorText(error), 'error'));
    return;
  }
  const objectSelect = select(objects.map((object) => [object.name, object.name] as const));
  const body = h('textarea', { rows: 6, spellcheck: false, name: 'query' });
  const recordId = h('input', { type: 'text', name: 'id', autocomplete: 'off', spellcheck: false });
  const liveId = h('input', { type: 'text', name: 'live-id', autocomplete: 'off', spellcheck: false });
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  const aside = h('div');
  const chosen = () => objects.find((object) => object.name === objectSelect.value);
  const sectorOf = () => objectSelect.value.split('.')[0] ?? '';

  const syncObject = () => {
    body.value = JSON.stringify({ object: objectSelect.value, limit: 50 }, null, 2);
    replace(aside, schemaAside(chosen()));
  };
  objectSelect.addEventListener('change', syncObject);

  async function show(title: string, work: () => Promise<Array<Record<string, unknown>>>, note?: string) {
    replace(results, h('p', {}, 'Reading…'));
    try {
      const rows = await work();
      replace(results, h('h3', {}, title), note ? h('p', { class: 'hint' }, note) : null, rowsTable(title, rows));
    } catch (error) {
      replace(results, notice(errorText(error), 'error'));
    }
  }

  const queryForm = h(
    'form',
    { class: 'query', 'aria-label': 'Query the cache' },
    labelled('Object', objectSelect),
    labelled('Query (JSON, as the query tool takes it)', body, 'where, order_by, limit, cursor and aggregate as in get_schema; not recorded'),
    h('button', { type: 'submit' }, 'Run query'),
  );
  queryForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void show('Query result', async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.value);
      } catch {
        throw new Error('The query is not valid JSON');
      }
      const answer = await api<{ rows: Array<Record<string, unknown>>; row_count: number; has_more: boolean; next_cursor?: string }>('POST', `/api/data/${encodeURIComponent(sectorOf())}`, parsed);
      return answer.rows;
    });
  });

  const recordForm = h('form', { class: 'inline-form', 'aria-label': 'Read a record by id' }, labelled('Record id', recordId), h('button', { type: 'submit' }, 'Read record'));
  recordForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void show('Record', async () => {
      const answer = await api<{ object: string; record: Record<string, unknown> }>('GET', `/api/data/${encodeURIComponent(sectorOf())}/${encodeURIComponent(recordId.value.trim())}`);
      return [answer.record];
    });
  });

  const liveForm = h(
    'form',
    { class: 'inline-form', 'aria-label': 'Read live from the source' },
    labelled('Id (optional: one record)', liveId),
    h('button', { type: 'submit' }, 'Read live from the source'),
    h('p', { class: 'hint' }, withCodeWords(LIVE_READ_NOTE)),
  );
  liveForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const id = liveId.value.trim();
    void show('Live read', async () => (await api<{ rows: Array<Record<string, unknown>> }>('POST', '/api/operator/fetch_live', { object: objectSelect.value, ...(id ? { id } : {}) })).rows);
  });

  replace(root, h('div', { class: 'inspector' }, h('div', { class: 'inspector-main' }, queryForm, recordForm, liveForm, results), aside));
  syncObject();
}
