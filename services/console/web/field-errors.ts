/**
 * Splits a refusal of the Console's routes into the fields it names and the rest, so that a form shows each
 * message beside its field (issue 39). The routes name a field in quotes: "invalid body: 'syncIntervalMinutes'
 * Too small…" or "Home Assistant needs valid credentials: 'credentials.baseUrl' must be…". No browser code.
 */
export type FieldErrors = { fields: Map<string, string[]>; rest: string };

const NAMED = /'([A-Za-z0-9_.[\]-]+)' ([^;]+)/g;

export function fieldErrorsOf(message: string): FieldErrors {
  const fields = new Map<string, string[]>();
  let first = -1;
  for (const match of message.matchAll(NAMED)) {
    if (first < 0) first = match.index;
    const [, path = '', text = ''] = match;
    fields.set(path, [...(fields.get(path) ?? []), text.trim()]);
  }
  if (fields.size === 0) return { fields, rest: message };
  // What comes before the first named field only says which request it was ("invalid body:").
  const lead = message.slice(0, first).trim().replace(/:$/, '');
  return { fields, rest: /^invalid (body|query|params|request)$/i.test(lead) ? '' : lead };
}

/** The form field a path names: `credentials.baseUrl` → `baseUrl`; other paths are the body's own names. */
export const fieldNameOf = (path: string) => path.replace(/^credentials\./, '');
