/**
 * Said in the instructions and in get_schema's own description, so a client that never sends `initialize`
 * (or drops its instructions) reads the same words.
 */
export const SCHEMA_PER_SECTOR =
  'get_schema for every granted sector is long: ask it with a sector, e.g. {"sector": "finance"}, for the sectors your question needs.';

/**
 * The `initialize` instructions (spec 4.1): the six things an agent must know, in the order it needs them.
 */
export const MCP_INSTRUCTIONS = [
  'This gateway serves one person\'s cached data, by sector (finance, health, mail, contacts, calendar, home). You see only the sectors your key was granted.',
  '1. Call describe_context first: it lists your granted sectors and, per connection, its name (display_name), provider and how old its data is.',
  `2. Then call get_schema and read each object's notes and fieldDocs before filtering: they state sign conventions, units, time zones and what fetch_live can read. ${SCHEMA_PER_SECTOR}`,
  '3. query reads ONE object of ONE sector; there are no cross-sector joins. Run one query per sector and combine the answers yourself.',
  '4. Responses are capped: has_more: true means you got one page, not the whole answer. Pass next_cursor unchanged to get the next page, or narrow the query, or use aggregate.',
  '5. fetch_live is the only read that leaves the cache and touches the source; prefer query, and use fetch_live only when current data matters.',
  '6. A granted sector covers both reading and acting: list_actions shows what the connected sources offer, and invoke_action performs one (action names start with their sector, e.g. home.light.turn_on).',
].join('\n');
