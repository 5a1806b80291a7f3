/** A minimal raw MCP client for load: initialize a session, then POST tools/call and read the SSE answer. */
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export async function openSession(url: string, key?: string): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
  });
  await response.text();
  const id = response.headers.get('mcp-session-id');
  if (!id) throw new Error(`initialize failed with ${response.status}`);
  await fetch(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': id }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.text());
  return id;
}

export async function callTool(url: string, session: string, name: string, args: unknown, key?: string): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, 'mcp-session-id': session, ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const text = await response.text();
  if (response.status !== 200 || text.includes('"isError":true')) throw new Error(`call failed: ${response.status} ${text.slice(0, 200)}`);
}
