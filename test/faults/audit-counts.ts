import pg from 'pg';

/** What the audit record holds at a moment of a fault test: calls made, rows written, losses counted. */
export type AuditReading = { produced: number; written: number; dropped: number };

/** One count from the stack's own database, on a connection of its own (the pools may be mid-fault). */
export async function countRows(databaseUrl: string, query: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(query)).rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

export const auditWrittenIn = (databaseUrl: string) => countRows(databaseUrl, 'SELECT count(*) AS n FROM audit_log');
export const auditDroppedIn = (databaseUrl: string) => countRows(databaseUrl, 'SELECT coalesce(sum(rows), 0) AS n FROM audit_drops');
