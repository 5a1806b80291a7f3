import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import pg from 'pg';
import { z } from 'zod';

/**
 * The bench's baseline for revision 2026-07-28: a bare v2 SDK server (`createMcpHandler`, stateless, a
 * server from the factory per request, the SDK's own Node adapter) whose one tool takes the query's
 * arguments and runs the same SQL as the gateway's query. Modern requests only (`legacy: 'reject'`), as the
 * gateway's modern lane serves them. No auth, no grant, no audit.
 */
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const { text, values } = JSON.parse(process.env.BENCH_SQL ?? '{}') as { text: string; values: unknown[] };

const queryInput = z.object({
  object: z.string(),
  where: z.array(z.object({ field: z.string(), op: z.string(), value: z.unknown() })).optional(),
  limit: z.number().int().optional(),
});

const handler = createMcpHandler(
  () => {
    const server = new McpServer({ name: 'bare-v2', version: '1.0.0' });
    server.registerTool('query', { description: 'the same SQL as the gateway', inputSchema: queryInput }, async () => {
      const result = await pool.query(text, values);
      const rows = result.rows.slice(0, -1);
      return { content: [{ type: 'text', text: JSON.stringify({ rows, row_count: rows.length, has_more: result.rows.length > rows.length }, null, 2) }] };
    });
    return server;
  },
  { legacy: 'reject' },
);
const serve = toNodeHandler(handler);

const http = createServer((request, response) => void serve(request, response));
http.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));

// Exit on SIGTERM (the bench's stop) through process.exit, so a --cpu-prof profile is written.
process.once('SIGTERM', () => process.exit(0));
