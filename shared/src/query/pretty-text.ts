/** Results already rendered as the tool's text, so a page measured against the budget is not rendered again. */
const rendered = new WeakMap<object, string>();

/**
 * The tool's text of a result: JSON indented two spaces. A result remembered by `rememberText` is not
 * rendered again.
 */
export function prettyText(value: unknown): string {
  if (typeof value === 'object' && value !== null) {
    const text = rendered.get(value);
    if (text !== undefined) return text;
  }
  return JSON.stringify(value, null, 2) ?? 'null';
}

/**
 * Remembers `text` as the rendering of a finished result. The result is frozen, so a later change cannot
 * leave the remembered text stale (it would throw instead).
 */
export function rememberText<T extends object>(value: T, text: string): T {
  rendered.set(Object.freeze(value), text);
  return value;
}
