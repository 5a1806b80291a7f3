import pg from 'pg';
import type { DatabasePool } from 'slonik';
import { TYPE_PARSERS } from './type-parsers.ts';

/** A built statement to run as it is: slonik's text and values, and a prepared statement's name if it has one. */
export type DirectStatement = { sql: string; values: readonly unknown[]; name?: string | undefined };

/** Runs a statement and resolves to its rows, each column read by the pool's type parsers. */
export type DirectReads = (statement: DirectStatement) => Promise<Record<string, unknown>[]>;

export type DirectReadOptions = { maximumPoolSize: number; statementTimeout: number; connectionTimeout: number; idleTimeout: number };

const readsOfPool = new WeakMap<DatabasePool, DirectReads>();
const directPools = new WeakMap<DatabasePool, pg.Pool>();

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
 * Gives a pool made by `createPool` a second way to its database for the query engine's pages, aggregates
 * and records: pg's own pool, with the same type parsers, statement timeout and limits, opened lazily.
 * Why not through slonik (docs/decisions.md): under load its per-query path (a bound connection,
 * interceptors, child loggers, a notice listener on each query) cost about 40 µs a query and kept each
 * read's rows alive past young collections, doubling what the gateway promoted to its old space. Every
 * other statement, and every write, still goes through slonik. Ending the pool ends both.
 */
export function attachDirectReads(pool: DatabasePool, databaseUrl: string, options: DirectReadOptions): void {
  const direct = new pg.Pool({
    connectionString: databaseUrl,
    max: options.maximumPoolSize,
    statement_timeout: options.statementTimeout,
    connectionTimeoutMillis: options.connectionTimeout,
    idleTimeoutMillis: options.idleTimeout,
    types: { getTypeParser } as unknown as pg.CustomTypesConfig,
  });
  // An idle connection the server closed (a restart, say): pg's pool drops it and the next read opens
  // another, so this is not a failure of anything in flight; without a listener it would end the process.
  direct.on('error', () => undefined);
  directPools.set(pool, direct);

  readsOfPool.set(pool, async ({ sql, values, name }) => {
    const result = await direct.query<Record<string, unknown>>({ name, text: postgresText(sql), values: values as unknown[] });
    return result.rows;
  });

  const endSlonik = pool.end;
  let ended: Promise<void> | undefined;
  (pool as { end: () => Promise<void> }).end = () => (ended ??= Promise.all([endSlonik(), direct.end()]).then(() => undefined));
}

/** The text Postgres is sent for a slonik statement: its `$slonik_N` placeholders as `$N`, as slonik does. */
export function postgresText(slonikSql: string): string {
  return slonikSql.replaceAll('$slonik_', '$');
}

/** The direct reads of a pool made by `createPool`. */
export function directReadsOf(pool: DatabasePool): DirectReads {
  const reads = readsOfPool.get(pool);
  if (!reads) throw new TypeError('direct reads belong to a pool made by createPool');
  return reads;
}

/**
 * pg's own pool beside a pool made by `createPool`, for what slonik cannot send: the audit-writer streams
 * each flush with COPY (issue 44). Same database, statement timeout and limits; ended with the pool.
 */
export function directPoolOf(pool: DatabasePool): pg.Pool {
  const direct = directPools.get(pool);
  if (!direct) throw new TypeError('a direct pool belongs to a pool made by createPool');
  return direct;
}
