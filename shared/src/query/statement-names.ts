/**
 * How many distinct statement texts a process names. Each named text becomes a prepared statement on every
 * pool connection that runs it (kept until the connection retires), so the names are few: an agent's
 * queries come in a handful of shapes, and a text past the limit simply runs unnamed, parsed each time.
 */
export const NAMED_STATEMENT_LIMIT = 64;

const names = new Map<string, string>();

/**
 * The prepared-statement name of a query engine statement's text, or undefined past the limit. Postgres
 * then parses and analyses the text once per connection instead of on every call (about 70–130 µs of its
 * CPU per page). Plans are still chosen per call by Postgres's default plan cache mode. The names are
 * process-wide, so one text has one name and one name one text on every connection of every pool.
 */
export function statementName(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < NAMED_STATEMENT_LIMIT) {
    name = `pcg_query_${names.size + 1}`;
    names.set(text, name);
  }
  return name;
}
