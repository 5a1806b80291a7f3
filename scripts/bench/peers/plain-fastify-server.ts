import Fastify from 'fastify';
import pg from 'pg';

/** The bench's floor: one plain fastify route running the same SQL, no MCP at all. */
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const { text, values } = JSON.parse(process.env.BENCH_SQL ?? '{}') as { text: string; values: unknown[] };
const app = Fastify();
app.post('/query', async () => {
  const result = await pool.query(text, values);
  const rows = result.rows.slice(0, -1);
  return { rows, row_count: rows.length, has_more: result.rows.length > rows.length };
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.stdout.write('ready\n');

// Exit on SIGTERM (the bench's stop) through process.exit, so a --cpu-prof profile is written.
process.once('SIGTERM', () => process.exit(0));
