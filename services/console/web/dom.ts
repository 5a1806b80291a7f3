/**
 * The page's only way to make elements. Every value is set as a text node or a property, never parsed as
 * markup: agent arguments, provider errors and record fields are data from outside (design 7.2).
 */
type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (name === 'class') element.className = String(value);
    else if (name in element && name !== 'list' && name !== 'form') (element as unknown as Record<string, unknown>)[name] = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    // Every text passes through visibleControls: a bidirectional control in a value from outside is shown, never obeyed.
    parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(visibleControls(String(child))) : child);
  }
}

export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

let nextId = 0;
/** A unique id, to tie a label to its control. */
export const uid = (prefix: string) => `${prefix}-${++nextId}`;

/** A labelled control: the label names it for a screen reader and for a click. */
export function labelled(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  if (!control.id) control.id = uid('field');
  const hintElement = hint ? h('small', { id: `${control.id}-hint`, class: 'hint' }, withCodeWords(hint)) : null;
  if (hintElement) control.setAttribute('aria-describedby', hintElement.id);
  return h('div', { class: 'field' }, h('label', { htmlFor: control.id }, label), control, hintElement);
}

export function select(options: ReadonlyArray<readonly [string, string]>, value?: string): HTMLSelectElement {
  const element = h('select', {}, ...options.map(([optionValue, text]) => h('option', { value: optionValue }, text)));
  if (value !== undefined) element.value = value;
  return element;
}

/** A time in the browser's zone, with the UTC instant on hover (and in `datetime`). */
export function time(iso: string | null | undefined, empty = '—'): HTMLElement {
  if (!iso) return h('span', {}, empty);
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return h('span', {}, iso);
  const local = at.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return h('time', { dateTime: at.toISOString(), title: `${at.toISOString().replace('T', ' ').replace('Z', ' UTC')}` }, local);
}

/** API text (issue 40): a snake_case name, a route, a quoted field path, a body's field, or a request refused as a whole. */
const API_TEXT = /\b[a-z][a-z0-9]*_[a-z0-9_]+\b|\/api\/|\b(GET|POST|PATCH|PUT|DELETE) \/|'[A-Za-z0-9_.[\]-]+'|^[Ii]nvalid (body|query|params|request)\b|\bsend (null|true|false)\b|^[a-z]+[A-Z][A-Za-z]* /;

/** The body fields a refusal may open with, in words. */
const FIELD_WORDS: Record<string, string> = {
  timeZone: 'The time zone',
  publicOrigin: 'The public address',
  syncIntervalMinutes: 'The sync interval',
  displayName: 'The name',
  expiresInDays: 'The expiry',
};

/**
 * A message in words: a message with API text in it is said as a sentence (its plain opening clause, or a
 * general one), and the Console's own words are kept under a details element for whoever needs them.
 */
export function inWords(text: string): { sentence: string; raw: string | null } {
  if (!API_TEXT.test(text)) return { sentence: text, raw: null };
  const named = text.replace(/^([a-z]+[A-Z][A-Za-z]*) /, (whole, field: string) => (FIELD_WORDS[field] ? `${FIELD_WORDS[field]} ` : whole));
  const opening = (named.split(/; |: |\(/)[0] ?? '').trim().replace(/[.,]$/, '');
  const sentence = opening && !API_TEXT.test(opening) && !/^invalid\b/i.test(opening) ? `${opening}.` : 'The Console could not do this with what was sent: check the values and try again.';
  return { sentence, raw: text };
}

/** A status line that screen readers announce; `kind` colours it. API text is kept under a details element. */
export function notice(text: string, kind: 'ok' | 'error' | 'warning' | 'info' = 'info'): HTMLElement {
  const { sentence, raw } = inWords(text);
  return h(
    raw === null ? 'p' : 'div',
    { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    sentence,
    raw === null ? null : h('details', { class: 'raw-answer' }, h('summary', {}, 'The Console’s answer, as sent'), h('code', {}, raw)),
  );
}

export function button(text: string, onClick: (event: Event) => void, props: Props = {}): HTMLButtonElement {
  return h('button', { type: 'button', ...props, onclick: onClick }, text);
}

/**
 * A table with a caption and header cells with scope. Each cell carries its column's name (`data-label`), so
 * below about 600 px the stylesheet shows every row as a card that keeps every field (issue 40).
 */
export function table(caption: string, headers: readonly string[], rows: ReadonlyArray<readonly Child[]>, empty: string): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  return h(
    'div',
    { class: 'table-wrap', tabIndex: 0, role: 'region', 'aria-label': caption },
    h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, ...headers.map((header) => h('th', { scope: 'col' }, header)))),
      h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((cell, index) => h('td', { 'data-label': headers[index] ?? '' }, cell))))),
    ),
  );
}

/** Bidirectional controls (LRE…RLO, LRI…PDI, the marks and the Arabic letter mark): shown, never obeyed. */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** A value's text with each bidirectional control written out as its code point, e.g. `⟨U+202E⟩`. */
export const visibleControls = (value: string) => value.replace(BIDI_CONTROLS, (control) => `⟨U+${control.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`);

/**
 * A value from outside (an agent's name, a source's or a device's name or error): isolated so its direction
 * cannot reorder the words around it, wrapped so a long unbroken value cannot spill, its controls made visible.
 */
export function isolated(value: string | number | null | undefined, tag: 'bdi' | 'code' = 'bdi'): HTMLElement {
  const text = visibleControls(String(value ?? ''));
  if (tag === 'code') return h('code', { class: 'isolated' }, text);
  return h('bdi', { class: 'isolated' }, text);
}

/** Machine names in a sentence (snake_case, dotted field paths, route paths): matched to be shown as code. */
const MACHINE_WORD = /(\/api\/[\w/:.-]*|\b[a-z][a-z0-9]*(?:[_.][a-z0-9]+)*_[a-z0-9_.]*\b|\b[a-z][a-z0-9]*\.[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*\b)/g;

/**
 * A sentence whose machine names (a tool, a field, a route) are set apart as `code`, so the words around them
 * read as words and the names read as what to type (issue 40).
 */
export function withCodeWords(text: string): HTMLElement {
  const parts = text.split(MACHINE_WORD);
  return h('span', {}, ...parts.map((part, index) => (index % 2 === 1 ? h('code', {}, part) : part)));
}

/** Copies a value to the clipboard and says so beside the button. */
export function copyButton(value: () => string, label = 'Copy'): HTMLElement {
  const status = h('span', { class: 'copied', role: 'status' });
  const copy = button(label, async () => {
    try {
      await navigator.clipboard.writeText(value());
      status.textContent = 'Copied';
    } catch {
      status.textContent = 'Copy failed: select the text and copy it';
    }
  });
  return h('span', { class: 'copy' }, copy, status);
}

/** A block of text to paste, with its own copy button. */
export function snippet(label: string, text: string): HTMLElement {
  return h('div', { class: 'snippet' }, h('div', { class: 'snippet-head' }, h('span', {}, label), copyButton(() => text)), h('pre', {}, h('code', {}, text)));
}
