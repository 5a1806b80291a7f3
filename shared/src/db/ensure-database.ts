import pg from 'pg';

/** Splits a database URL into the database name and a URL for the server's `postgres` database. */
export function maintenanceUrl(databaseUrl: string): { database: string; url: string } {
  const url = new URL(databaseUrl);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!database) throw new Error('DATABASE_URL names no database');
  url.pathname = '/postgres';
  return { database, url: url.toString() };
}

/** Creates the database named in the URL when it does not exist yet. Returns whether it was created. */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const { database, url } = maintenanceUrl(databaseUrl);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount && found.rowCount > 0) return false;
    try {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
    } catch (error) {
      // Another process created it between the check and the CREATE.
      if ((error as { code?: string }).code === '42P04') return false;
      throw error;
    }
    return true;
  } finally {
    await client.end();
  }
}
