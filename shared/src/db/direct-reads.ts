import pg from 'pg';
import { TYPE_PARSERS } from './type-parsers.ts';

/** A built statement to run as it is: slonik's text and values, and a prepared statement's name if it has one. */
export type DirectStatement = { sql: string; values: readonly unknown[]; name?: string | undefined };

/** Runs a statement and resolves to its rows, each column read by the pool's type parsers. */
export type DirectReads = (statement: DirectStatement) => Promise<Record<string, unknown>[]>;

export type DirectPoolOptions = { maximumPoolSize: number; statementTimeout: number; connectionTimeout: number; idleTimeout: number };

/**
 * pg's own pool beside slonik's, to the same database with the same type parsers, statement timeout and
 * limits, opened lazily. Ended only with the `Database` it belongs to (create-database.ts).
 */
export type DirectPool = {
  /** The query engine's pages, aggregates and records, and the key lookup. */
  read: DirectReads;
  /** A client of its own for what slonik cannot send: the audit-writer streams each flush with COPY (issue 44). Release it. */
  connect(): Promise<pg.PoolClient>;
};

type Parse = (value: string) => unknown;

const defaultParser = pg.types.getTypeParser as (oid: number, format?: string) => Parse;
/** pg's parser of `text[]`: nested arrays of strings and nulls, whatever the element type was. */
const TEXT_ARRAY_OID = 1009;
const parseTextArray = defaultParser(TEXT_ARRAY_OID) as (value: string) => unknown[];

function mapArray(items: unknown[], parse: Parse): unknown[] {
  return items.map((item) => (Array.isArray(item) ? mapArray(item, parse) : item === null ? null : parse(item as string)));
}

const parsersByOid = new Map<number, Parse>();
for (const parser of TYPE_PARSERS) {
  parsersByOid.set(parser.oid, parser.parse);
  parsersByOid.set(parser.arrayOid, (value) => mapArray(parseTextArray(value), parser.parse));
}

function getTypeParser(oid: number, format?: string): Parse {
  return parsersByOid.get(oid) ?? defaultParser(oid, format);
}

/**
 * Opens the direct pool: a second way to the database for the query engine's pages, aggregates and
 * records. Why not through slonik (docs/decisions.md): under load its per-query path (a bound connection,
 * interceptors, child loggers, a notice listener on each query) cost about 40 µs a query and kept each
 * read's rows alive past young collections, doubling what the gateway promoted to its old space. Every
 * other statement, and every write, still goes through slonik.
 */
export function openDirectPool(databaseUrl: string, options: DirectPoolOptions): { direct: DirectPool; end: () => Promise<void> } {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.maximumPoolSize,
    statement_timeout: options.statementTimeout,
    connectionTimeoutMillis: options.connectionTimeout,
    idleTimeoutMillis: options.idleTimeout,
    types: { getTypeParser } as unknown as pg.CustomTypesConfig,
  });
  // An idle connection the server closed (a restart, say): pg's pool drops it and the next read opens
  // another, so this is not a failure of anything in flight; without a listener it would end the process.
  pool.on('error', () => undefined);
  const direct: DirectPool = {
    async read({ sql, values, name }) {
      const result = await pool.query<Record<string, unknown>>({ name, text: postgresText(sql), values: values as unknown[] });
      return result.rows;
    },
    connect: () => pool.connect(),
  };
  return { direct, end: () => pool.end() };
}

/** The text Postgres is sent for a slonik statement: its `$slonik_N` placeholders as `$N`, as slonik does. */
export function postgresText(slonikSql: string): string {
  return slonikSql.replaceAll('$slonik_', '$');
}
