import { rawMcp } from './gateway-harness.ts';

/** The `_meta` envelope every request of revision 2026-07-28 carries (written out here, not taken from the code). */
export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-modern-client', version: '1.0.0' },
};

/** The headers a 2026-07-28 client mirrors from the body (Streamable HTTP, request metadata). */
export function modernHeaders(method: string, name?: string): Record<string, string> {
  return { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
}

/** One 2026-07-28 request with its envelope and mirrored headers (Mcp-Param-* of the gateway's tools included). */
export async function modernCall(address: string, key: string, method: string, params: Record<string, unknown> = {}, id: string | number = 1) {
  const name = typeof params.name === 'string' ? params.name : undefined;
  const args = (params.arguments ?? {}) as Record<string, unknown>;
  const paramHeaders: Record<string, string> = {};
  if (typeof args.sector === 'string') paramHeaders['mcp-param-sector'] = args.sector;
  if (typeof args.object === 'string') paramHeaders['mcp-param-object'] = args.object;
  return rawMcp(address, {
    headers: { ...modernHeaders(method, name), ...paramHeaders, authorization: `Bearer ${key}` },
    body: { jsonrpc: '2.0', id, method, params: { ...params, _meta: MODERN_META } },
  });
}
