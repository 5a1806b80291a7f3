/**
 * A minimal raw MCP client for load: initialize a session, POST tools/call and read the SSE answer,
 * DELETE a session. The key, when there is one, goes with every request (MCP authorization; the gateway
 * refuses a session request without it).
 */
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** The version sessions are opened with. */
const SESSION_VERSION = '2025-11-25';

const auth = (key?: string): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {});

export async function openSession(url: string, key?: string): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...auth(key) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: SESSION_VERSION, capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
  });
  const text = await response.text();
  const id = response.headers.get('mcp-session-id');
  if (!id) throw new Error(`initialize failed with ${response.status}: ${text.slice(0, 200)}`);
  const initialized = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...auth(key), 'mcp-session-id': id },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  const answer = await initialized.text();
  if (initialized.status !== 202) throw new Error(`notifications/initialized failed with ${initialized.status}: ${answer.slice(0, 200)}`);
  return id;
}

export async function closeSession(url: string, session: string, key?: string): Promise<void> {
  const response = await fetch(url, { method: 'DELETE', headers: { ...auth(key), 'mcp-session-id': session } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`closing a session failed with ${response.status}: ${text.slice(0, 200)}`);
}

let nextId = 1;

export async function callTool(url: string, session: string, name: string, args: unknown, key?: string): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    // The version the session negotiated, sent with every request as the SDK client does.
    headers: { ...HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': SESSION_VERSION, ...auth(key) },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }),
  });
  const text = await response.text();
  if (response.status !== 200 || text.includes('"isError":true') || !text.includes('"result"')) {
    throw new Error(`call failed: ${response.status} ${text.slice(0, 200)}`);
  }
}

/** Revision 2026-07-28: no session; the version and capabilities in `_meta`, mirrored in headers the server checks. */
const MODERN_VERSION = '2026-07-28';

/**
 * One stateless tools/call of revision 2026-07-28, as a modern client sends it: the method and tool name
 * mirrored in `Mcp-Method` and `Mcp-Name`, and the arguments a tool declares as mirrored (`paramHeaders`)
 * in `Mcp-Param-*`. The answer is read whole (a JSON body, or an SSE stream that ends with the result).
 */
export async function callToolModern(url: string, name: string, args: unknown, paramHeaders: Record<string, string>, key?: string): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...auth(key), 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': 'tools/call', 'mcp-name': name, ...paramHeaders },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } },
    }),
  });
  const text = await response.text();
  if (response.status !== 200 || text.includes('"isError":true') || !text.includes('"result"')) {
    throw new Error(`modern call failed: ${response.status} ${text.slice(0, 200)}`);
  }
}
