import type { Tool } from '@modelcontextprotocol/server';

/**
 * Tool arguments that revision 2026-07-28 clients mirror into `Mcp-Param-<Name>` headers (`x-mcp-header`), so a
 * proxy in front of the gateway can see which sector or object a call touches without parsing its body. The
 * modern lane lists them and checks each header against the body; the 2025 lane's tools/list is unchanged.
 */
export const PARAM_HEADERS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  get_schema: { sector: 'Sector' },
  list_actions: { sector: 'Sector' },
  query: { object: 'Object' },
  get_record: { object: 'Object' },
  fetch_live: { object: 'Object' },
};

/** Every `Mcp-Param-*` header a tool of the gateway declares (for CORS preflights). */
export const MCP_PARAM_HEADER_NAMES = [...new Set(Object.values(PARAM_HEADERS).flatMap((byProperty) => Object.values(byProperty)))].map((name) => `Mcp-Param-${name}`);

/**
 * The modern lane's tools/list: the same tools and input schemas, each declared argument marked with its
 * `x-mcp-header` (a top-level string property, as the revision allows).
 */
export function withParamHeaders(listing: readonly Tool[]): Tool[] {
  return listing.map((tool) => {
    const declared = PARAM_HEADERS[tool.name];
    const properties = tool.inputSchema.properties as Record<string, Record<string, unknown>> | undefined;
    if (!declared || !properties) return tool;
    const marked = Object.fromEntries(
      Object.entries(properties).map(([name, schema]) => [name, declared[name] === undefined ? schema : { ...schema, 'x-mcp-header': declared[name] }]),
    );
    return { ...tool, inputSchema: { ...tool.inputSchema, properties: marked as Tool['inputSchema']['properties'] } };
  });
}
