import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import pg from 'pg';

/**
 * The bench's baseline: a bare SDK Streamable HTTP server (stateful, SSE answers, one McpServer per
 * session) whose one tool runs the same SQL as the gateway's query. No auth, no grant, no audit.
 */
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const { text, values } = JSON.parse(process.env.BENCH_SQL ?? '{}') as { text: string; values: unknown[] };
const transports = new Map<string, StreamableHTTPServerTransport>();

function sessionServer(): McpServer {
  const server = new McpServer({ name: 'bare-sdk', version: '1.0.0' });
  server.registerTool('query', { description: 'the same SQL as the gateway' }, async () => {
    const result = await pool.query(text, values);
    const rows = result.rows.slice(0, -1);
    return { content: [{ type: 'text', text: JSON.stringify({ rows, row_count: rows.length, has_more: result.rows.length > rows.length }, null, 2) }] };
  });
  return server;
}

const http = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', async () => {
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const id = request.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? transports.get(id) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sessionId) => void transports.set(sessionId, transport as StreamableHTTPServerTransport),
      });
      const opened = transport;
      opened.onclose = () => void (opened.sessionId && transports.delete(opened.sessionId));
      await sessionServer().connect(transport);
    }
    await transport.handleRequest(request, response, body);
  });
});
http.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));

// Exit on SIGTERM (the bench's stop) through process.exit, so a --cpu-prof profile is written.
process.once('SIGTERM', () => process.exit(0));
